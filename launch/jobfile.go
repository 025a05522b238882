package launch

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadJobFile reads the job file at path whole (colo node --job-file,
// COLO_JOB_FILE): a regular file of at most 1 GiB. Anything else is
// refused before it is opened, naming path and what it is: a directory,
// a named pipe (whose open waits for a writer, for ever, and a signal
// does not end the wait), a device (/dev/zero never ends), a socket.
func ReadJobFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regularJobFile(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Again on the file opened, in case path was replaced between the two.
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regularJobFile(path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEnvelope+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxEnvelope {
		return nil, fmt.Errorf("%s: larger than %d MiB: want a job file (colo train --write-job)", path, maxEnvelope>>20)
	}
	return b, nil
}

// regularJobFile refuses a job file that is not a regular file, naming
// what it is.
func regularJobFile(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	what := "of mode " + m.Type().String()
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file: want a job file, as colo train --write-job writes it", path, what)
}
