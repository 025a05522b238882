package clib

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"colo/ps/route"
)

// PlacedRoute returns the routing table (Job.Route) of a placement directory's
// param.part (`<id> <machine>` per line, colo partition's): key id on the
// server of its machine, ids the file does not name on server id mod k.
func PlacedRoute(dir string, servers int) ([]byte, error) {
	path := filepath.Join(dir, "param.part")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var param []int32
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: %q: want `<parameter id> <machine>`", path, line, sc.Text())
		}
		id, err1 := strconv.ParseUint(string(f[0]), 10, 32)
		m, err2 := strconv.Atoi(string(f[1]))
		if err1 != nil || err2 != nil || m < 0 || m >= servers {
			return nil, fmt.Errorf("%s:%d: %q: want a parameter id below 2^32 and a machine in 0..%d", path, line, sc.Text(), servers-1)
		}
		for uint64(len(param)) <= id {
			param = append(param, -1)
		}
		param[id] = int32(m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(param) == 0 {
		return nil, fmt.Errorf("%s: no parameters", path)
	}
	for id, m := range param {
		if m < 0 {
			param[id] = int32(id % servers)
		}
	}
	t, err := route.FromPlacement(param, servers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t.MarshalBinary()
}
