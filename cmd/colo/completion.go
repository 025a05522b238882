package main

import (
	"errors"
	"io"
	"strings"

	"colo/internal/cli"
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
