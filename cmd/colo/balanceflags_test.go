package main

import (
	"flag"
	"testing"

	"colo/balance"
)

// TestBalanceSliceFlag checks --slice: auto, a number of keys, and the
// error naming the flag and what it wants.
func TestBalanceSliceFlag(t *testing.T) {
	for _, c := range []struct {
		arg, err string
		slice    uint64
		auto     bool
	}{
		{"auto", "", balance.DefaultConfig().Slice, true},
		{"512", "", 512, false},
		{"0", `--slice "0": want a positive number of keys, or auto`, 0, false},
		{"-3", `--slice "-3": want a positive number of keys, or auto`, 0, false},
		{"big", `--slice "big": want a positive number of keys, or auto`, 0, false},
	} {
		var f balanceFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse([]string{"--balance", "aware", "--slice", c.arg}); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.Config()
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("--slice %s: error %v, want %q", c.arg, err, c.err)
			}
			continue
		}
		if err != nil || cfg.Slice != c.slice || cfg.Auto != c.auto {
			t.Errorf("--slice %s: %+v, %v", c.arg, cfg, err)
		}
	}
}
