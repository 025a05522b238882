package ooc

import "testing"

func TestMemoryCap(t *testing.T) {
	for _, c := range []struct {
		memory, algo string
		cap          int64
		ok           bool
		err          string
	}{
		{"off", "parsa", 0, false, ""},
		{"OFF", "parsa", 0, false, ""},
		{"auto", "random", 0, false, ""},
		{"", "metis", 0, false, ""},
		{"1GiB", "parsa", 1 << 30, true, ""},
		{"64M", "parsa", 64 << 20, true, ""},
		{"1GiB", "random", 0, false, "--memory 1GiB: only --algo parsa runs out of core, not random"},
		{"0", "parsa", 0, false, "--memory 0: want a positive size, auto or off"},
		{"lots", "parsa", 0, false, "--memory lots: "},
	} {
		cap, ok, err := MemoryCap(c.memory, "/nonexistent", c.algo)
		if c.err != "" {
			if err == nil || len(err.Error()) < len(c.err) || err.Error()[:len(c.err)] != c.err {
				t.Errorf("MemoryCap(%q, %q) error %v, want %q…", c.memory, c.algo, err, c.err)
			}
			continue
		}
		if err != nil || cap != c.cap || ok != c.ok {
			t.Errorf("MemoryCap(%q, %q) = %d, %v, %v; want %d, %v", c.memory, c.algo, cap, ok, err, c.cap, c.ok)
		}
	}
}

func TestMachineCap(t *testing.T) {
	for _, c := range []struct {
		memory string
		cap    int64
		err    string
	}{
		{"", 0, ""}, {"auto", 0, ""}, {"Off", 0, ""}, {"512MiB", 512 << 20, ""},
		{"0", 0, "--memory 0: want the cap of each machine, a positive size (512MiB, 2GB), auto or off (no cap)"},
		{"x", 0, "--memory: "},
	} {
		cap, err := MachineCap(c.memory)
		if c.err != "" {
			if err == nil || len(err.Error()) < len(c.err) || err.Error()[:len(c.err)] != c.err {
				t.Errorf("MachineCap(%q) error %v, want %q…", c.memory, err, c.err)
			}
			continue
		}
		if err != nil || cap != c.cap {
			t.Errorf("MachineCap(%q) = %d, %v; want %d", c.memory, cap, err, c.cap)
		}
	}
}
