package main

import "colo/partition"

// algoFlags registers the flags of the individual partitioners on f,
// writing into opt. `colo partition` and `colo eval` share them.
func algoFlags(f *cmdFlags, opt *partition.Options) {
	f.BoolVar(&opt.Balanced, "balanced", false, "random: deal samples evenly, |U_i| ≤ ⌈n/k⌉")
}
