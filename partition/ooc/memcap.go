package ooc

import (
	"fmt"
	"strings"
)

// MemoryCap decides, from the value of colo partition's --memory (a size,
// auto or off), whether algo partitions the file at path out of core and
// within how many bytes: a size runs out of core within it (parsa only);
// auto (or empty) within AutoMemory's cap when the file's estimated
// in-memory size exceeds the available memory (parsa only); off never.
// ok is false for an in-memory run. Errors name --memory.
func MemoryCap(memory, path, algo string) (cap int64, ok bool, err error) {
	switch strings.ToLower(memory) {
	case "off":
		return 0, false, nil
	case "auto", "":
		if algo != "parsa" {
			return 0, false, nil
		}
		cap, ok = AutoMemory(path)
		return cap, ok, nil
	}
	c, err := ParseBytes(memory)
	if err != nil {
		return 0, false, fmt.Errorf("--memory %s: %v", memory, err)
	}
	if c <= 0 {
		return 0, false, fmt.Errorf("--memory %s: want a positive size, auto or off", memory)
	}
	if algo != "parsa" {
		return 0, false, fmt.Errorf("--memory %s: only --algo parsa runs out of core, not %s", memory, algo)
	}
	return c, true, nil
}

// MachineCap returns the memory cap of each machine of colo partition
// --processes from --memory: 0 (none) for auto, off or empty, else the
// size, which must be positive. Errors name --memory.
func MachineCap(memory string) (int64, error) {
	switch strings.ToLower(memory) {
	case "", "auto", "off":
		return 0, nil
	}
	c, err := ParseBytes(memory)
	if err != nil {
		return 0, fmt.Errorf("--memory: %v", err)
	}
	if c <= 0 {
		return 0, fmt.Errorf("--memory %s: want the cap of each machine, a positive size (512MiB, 2GB), auto or off (no cap)", memory)
	}
	return c, nil
}
