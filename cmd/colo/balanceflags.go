package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"colo/balance"
	"colo/transport"
)

// balanceFlags are the command-line settings of load balancing (package
// balance) and of a changing emulated network (colo train --balance …):
// Register adds them to a flag set, Config and Network read them.
type balanceFlags struct {
	Scheme string
	Every  int
	Slice  string
	Probe  uint64
	Random string
	Change time.Duration
}

// Register adds the flags to fs.
func (f *balanceFlags) Register(fs *flag.FlagSet) {
	d := balance.DefaultConfig()
	fs.StringVar(&f.Scheme, "balance", "", "mlp, cnn on co-located machines: re-decide which server holds which keys while training: average (even, never moves), elastic, aware (seed 002: measured links) or oracle (the true emulated rates); empty: no balancer")
	fs.IntVar(&f.Every, "balance-every", d.Every, "--balance: rounds between two decisions")
	fs.StringVar(&f.Slice, "slice", strconv.FormatUint(d.Slice, 10), "--balance: slice granularity in keys, every server's share whole slices; auto: Eq. 4, √(M·α/N), with α measured on the links before the first decision")
	fs.Uint64Var(&f.Probe, "probe", d.Probe, "--balance: keys every server keeps so that its links stay measured (probe slices)")
	fs.StringVar(&f.Random, "bandwidth-random", "", "emulated network (in process): draw every machine's link rate from [MAX/10, MAX], such as 200mbit (seeded by --seed)")
	fs.DurationVar(&f.Change, "bandwidth-change", 0, "with --bandwidth-random: draw the rates again every this period, such as 30s (0: never)")
}

// Config returns the balancing configuration of the flags, nil when no
// scheme is given; errors name the flag.
func (f *balanceFlags) Config() (*balance.Config, error) {
	if f.Scheme == "" {
		return nil, nil
	}
	c := balance.DefaultConfig()
	c.Scheme, c.Every, c.Probe = f.Scheme, f.Every, f.Probe
	var err error
	if c.Slice, c.Auto, err = f.SliceSetting(); err != nil {
		return nil, err
	}
	if err := balance.CheckScheme(f.Scheme); err != nil {
		return nil, fmt.Errorf("--balance: %v", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("--balance-every, --slice: %v", err)
	}
	return &c, nil
}

// SliceSetting returns the granularity of --slice, or auto (then slice
// is the default, used if α cannot be measured).
func (f *balanceFlags) SliceSetting() (slice uint64, auto bool, err error) {
	if f.Slice == "auto" {
		return balance.DefaultConfig().Slice, true, nil
	}
	x, err := strconv.ParseUint(f.Slice, 10, 64)
	if err != nil || x == 0 {
		return 0, false, fmt.Errorf("--slice %q: want a positive number of keys, or auto", f.Slice)
	}
	return x, false, nil
}

// Network returns the rate bound of --bandwidth-random in bytes per
// second (0: none) and the period of --bandwidth-change.
func (f *balanceFlags) Network() (max float64, change time.Duration, err error) {
	if f.Random == "" {
		if f.Change != 0 {
			return 0, 0, fmt.Errorf("--bandwidth-change needs --bandwidth-random")
		}
		return 0, 0, nil
	}
	if max, err = transport.ParseRate(f.Random); err != nil || max <= 0 {
		return 0, 0, fmt.Errorf("--bandwidth-random %q: want a positive rate such as 200mbit", f.Random)
	}
	if f.Change < 0 {
		return 0, 0, fmt.Errorf("--bandwidth-change %v: want a positive period", f.Change)
	}
	return max, f.Change, nil
}
