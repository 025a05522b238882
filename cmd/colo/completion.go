package main

import (
	"errors"
	"io"
	"strings"

	"colo/app"
	"colo/balance"
	"colo/gossip"
	"colo/internal/cli"
	"colo/partition"
	"colo/shard"
)

// Shell completion. colo completion bash|zsh|fish prints a script that
// the shell sources; the script asks the binary itself for the
// candidates (colo __complete WORD… PARTIAL), so they are always those of
// the binary in use: the command names, a command's flags from the very
// flag set it parses (built by the command, then listed instead of parsed:
// cmdFlags.parse in completion mode, cli.Flags.Complete), the values of a flag with a fixed
// set of them, and nothing where a file is expected, which tells the
// script to complete file names.

// completing is what a completion request asks for: the word being
// typed and the one before it.
type completing struct {
	word, prev string
}

// errCompleted ends a command run only to list its flags.
var errCompleted = errors.New("completed")

// flagChoices returns the fixed set of values of the string flag name of
// command cmd (its FlagSet's name, such as "train" or "bench rcd"), for
// completion; nil when its value is free (a number, a file, a list). An
// cli.Enum lists its own values (cli.Valuer) and needs no entry here.
// TestFlagChoicesExist keeps this table to flags that exist.
func flagChoices(cmd, name string) []string {
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

// runComplete answers colo __complete WORD… PARTIAL: the words typed
// after colo, the last being the one to complete (possibly empty).
func runComplete(e *env, words []string) int {
	if len(words) == 0 {
		return 0
	}
	if len(words) == 1 {
		names := []string{"help"}
		for _, c := range commands() {
			names = append(names, c.name)
		}
		cli.WriteMatches(e.out, words[0], names)
		return 0
	}
	name, args := words[0], words[1:len(words)-1]
	c := &completing{word: words[len(words)-1]}
	if len(words) >= 2 {
		c.prev = words[len(words)-2]
	}
	switch name {
	case "help":
		if len(words) == 2 {
			return runComplete(e, words[1:])
		}
		return 0
	case "completion":
		if len(args) == 0 && !strings.HasPrefix(c.word, "-") {
			cli.WriteMatches(e.out, c.word, []string{"bash", "zsh", "fish"})
			return 0
		}
	case "bench":
		if len(args) == 0 {
			cli.WriteMatches(e.out, c.word, benchNames)
			return 0
		}
	}
	for _, cmd := range commands() {
		if cmd.name == name {
			ce := &env{out: e.out, errOut: io.Discard, complete: c}
			cmd.run(ce, args)
			return 0
		}
	}
	return 0
}

// runCompletion is colo completion SHELL.
func runCompletion(e *env, args []string) error {
	f := newFlags(e, "completion", "colo completion bash|zsh|fish",
		"Prints a script that completes colo's commands, flags and the values\n"+
			"of flags with a fixed set of them in the shell named; the script asks\n"+
			"the colo on the PATH for the candidates, so they follow the binary.\n\n"+
			"  bash:  source <(colo completion bash)     (or write it to\n"+
			"         /etc/bash_completion.d/colo)\n"+
			"  zsh:   source <(colo completion zsh)\n"+
			"  fish:  colo completion fish > ~/.config/fish/completions/colo.fish")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	script, ok := cli.Script(pos[0])
	if !ok {
		return usageError("shell %q: want bash, zsh or fish", pos[0])
	}
	_, err = io.WriteString(e.out, script)
	return err
}
