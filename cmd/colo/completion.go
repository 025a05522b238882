package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Shell completion. colo completion bash|zsh|fish prints a script that
// the shell sources; the script asks the binary itself for the
// candidates (colo __complete WORD… PARTIAL), so they are always those of
// the binary in use: the command names, a command's flags from the very
// flag set it parses (built by the command, then listed instead of parsed:
// cmdFlags.parse in completion mode), the values of a flag with a fixed
// set of them, and nothing where a file is expected, which tells the
// script to complete file names.

// completing is what a completion request asks for: the word being
// typed and the one before it.
type completing struct {
	word, prev string
}

// errCompleted ends a command run only to list its flags.
var errCompleted = errors.New("completed")

// valuer is a flag value with a fixed set of values (enumFlag).
type valuer interface{ Values() []string }

// completeFlags writes the candidates for c from the flag set f: the
// values of the flag before the word when it has a fixed set, the flags
// (but the hidden older spellings) when the word starts with -, nothing
// otherwise (a file).
func (f *cmdFlags) completeFlags(w io.Writer, c *completing) {
	if strings.HasPrefix(c.prev, "-") && !strings.Contains(c.prev, "=") {
		if fl := f.Lookup(strings.TrimLeft(c.prev, "-")); fl != nil && !isBoolFlag(fl) {
			if v, ok := fl.Value.(valuer); ok {
				writeMatches(w, c.word, v.Values())
			}
			return // the flag's value: a file or a free value
		}
	}
	if !strings.HasPrefix(c.word, "-") {
		return
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.aliases[fl.Name]; !alias {
			names = append(names, "--"+fl.Name)
		}
	})
	writeMatches(w, c.word, names)
}

// isBoolFlag reports whether fl takes no value.
func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// writeMatches writes the candidates that start with prefix, sorted, one
// a line.
func writeMatches(w io.Writer, prefix string, cands []string) {
	sort.Strings(cands)
	for _, s := range cands {
		if strings.HasPrefix(s, prefix) {
			fmt.Fprintln(w, s)
		}
	}
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
		writeMatches(e.out, words[0], names)
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
			writeMatches(e.out, c.word, []string{"bash", "zsh", "fish"})
			return 0
		}
	case "bench":
		if len(args) == 0 {
			writeMatches(e.out, c.word, benchNames)
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
	switch pos[0] {
	case "bash":
		_, err = io.WriteString(e.out, bashCompletion)
	case "zsh":
		_, err = io.WriteString(e.out, "autoload -U +X bashcompinit && bashcompinit\n"+bashCompletion)
	case "fish":
		_, err = io.WriteString(e.out, fishCompletion)
	default:
		return usageError("shell %q: want bash, zsh or fish", pos[0])
	}
	return err
}

// The scripts: the candidates of colo __complete, or file names when it
// has none.
const bashCompletion = `# colo completion for bash (colo completion bash)
_colo() {
	local cur="${COMP_WORDS[COMP_CWORD]}" out
	out=$(colo __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
	if [ -n "$out" ]; then
		COMPREPLY=($(compgen -W "$out" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _colo colo
`

const fishCompletion = `# colo completion for fish (colo completion fish)
function __colo_complete
	set -l words (commandline -opc) (commandline -ct)
	colo __complete $words[2..-1] 2>/dev/null
end
complete -c colo -a '(__colo_complete)'
`
