package cli

import (
	"strings"

	"colo/app"
	"colo/balance"
	"colo/gossip"
	"colo/partition"
	"colo/shard"
)

// Choices returns the fixed set of values of the string flag name of
// command cmd (its FlagSet's name, such as "train" or "bench rcd"), for
// completion; nil when its value is free (a number, a file, a list). An
// Enum lists its own values (Valuer) and needs no entry here.
// colo's TestFlagChoicesExist keeps this table to flags that exist.
func Choices(cmd, name string) []string {
	var formats = []string{"libsvm", "snap", "snap-undirected", "criteo", "ratings"}
	schemes := func() []string {
		var s []string
		for _, sc := range shard.Schemes() {
			s = append(s, string(sc))
		}
		return s
	}
	node := cmd == "node"
	switch name {
	case "app":
		return app.Names()
	case "algo":
		return partition.Names()
	case "placement":
		switch {
		case node:
			return nil // a directory
		case strings.HasPrefix(cmd, "bench ") || strings.Contains(cmd, "decentralised"):
			return schemes() // dense models only: sharding schemes
		}
		return append(partition.Names(), schemes()...)
	case "scheme":
		return schemes()
	case "format":
		if cmd == "shard" {
			return []string{"idx", "libsvm", "csv"}
		}
		return formats
	case "consistency":
		if cmd == "train" || strings.HasPrefix(cmd, "bench ") {
			return []string{"bsp", "async", "ssp:"}
		}
		return []string{"bsp", "async", "bounded"}
	case "updater":
		if node {
			return []string{"sum", "sgd", "momentum", "adagrad", "adam", "ftrl"}
		}
		return []string{"sgd", "momentum", "adagrad", "adam", "ftrl"}
	case "role":
		return []string{"scheduler", "server", "worker", "machine", "evaluator"}
	case "job":
		return []string{"smoke", "train", "parsa", "none"}
	case "mode":
		return []string{"ps", "decentralised"}
	case "features":
		if node {
			return []string{"raw", "l2", "log1p-l2"}
		}
		return []string{"auto", "raw", "l2", "log1p-l2"}
	case "header":
		return []string{"auto", "yes", "no"}
	case "standardize":
		return []string{"auto", "on", "off"}
	case "lr-scaling":
		return []string{"linear", "none"}
	case "interactions":
		return []string{"none", "dot"}
	case "lr-decay":
		return []string{"none", "cosine", "step:"}
	case "recovery":
		return []string{"replace", "restart"}
	case "balance":
		return balance.Schemes()
	case "topology":
		return gossip.Topologies()
	case "submodular", "function":
		return []string{string(shard.FacilityLocation), string(shard.GraphCut)}
	case "greedy":
		return []string{"lazy", "stochastic", "plain"}
	case "grow":
		return []string{"min-f", "proportional"}
	case "order":
		return []string{"atc", "cta"}
	case "transport":
		return []string{"mem", "tcp"}
	case "to":
		return []string{"hmetis", "libsvm"}
	}
	return nil
}
