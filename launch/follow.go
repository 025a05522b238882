package launch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Follow copies the lines of the file at path, as it grows, to w with
// prefix, until stop is closed and it has copied everything (a last line
// without its newline too): the output of a process that writes to a
// file, as colo run shows its workers'. It looks for more every 100 ms,
// and holds mu while it writes, which the followers of one w share. A
// file that does not exist yet is looked for again.
func Follow(path, prefix string, w io.Writer, mu *sync.Mutex, stop <-chan struct{}) {
	var f *os.File
	var rest []byte
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		final := false
		select {
		case <-stop:
			final = true
		case <-tick.C:
		}
		if f == nil {
			f, _ = os.Open(path)
		}
		for f != nil {
			n, _ := f.Read(buf)
			if n == 0 {
				break
			}
			rest = append(rest, buf[:n]...)
			mu.Lock()
			for {
				i := bytes.IndexByte(rest, '\n')
				if i < 0 {
					break
				}
				fmt.Fprintf(w, "%s%s\n", prefix, rest[:i])
				rest = rest[i+1:]
			}
			mu.Unlock()
		}
		if final {
			if len(rest) > 0 {
				mu.Lock()
				fmt.Fprintf(w, "%s%s\n", prefix, rest)
				mu.Unlock()
			}
			if f != nil {
				f.Close()
			}
			return
		}
	}
}
