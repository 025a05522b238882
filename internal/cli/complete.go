package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Valuer is a flag value with a fixed set of values.
type Valuer interface{ Values() []string }

// Complete writes the shell-completion candidates for word, typed after
// prev, from the flag set f: the values of the flag prev when it has a
// fixed set (its Value is a Valuer, or choices of its primary name is not
// nil), the flags (but the aliases) when word starts with -, nothing
// otherwise (a file, which tells the script to complete file names).
func (f *Flags) Complete(w io.Writer, word, prev string, choices func(name string) []string) {
	if strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		if fl := f.Lookup(strings.TrimLeft(prev, "-")); fl != nil && !IsBoolFlag(fl) {
			if v, ok := fl.Value.(Valuer); ok {
				WriteMatches(w, word, v.Values())
			} else if vs := choices(f.Primary(fl.Name)); vs != nil {
				WriteMatches(w, word, vs)
			}
			return // the flag's value: a file or a free value
		}
	}
	if !strings.HasPrefix(word, "-") {
		return
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.Aliases[fl.Name]; !alias {
			names = append(names, "--"+fl.Name)
		}
	})
	WriteMatches(w, word, names)
}

// IsBoolFlag reports whether fl takes no value.
func IsBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// WriteMatches writes the candidates that start with prefix, sorted, one
// a line (sorting cands in place).
func WriteMatches(w io.Writer, prefix string, cands []string) {
	sort.Strings(cands)
	for i, s := range cands {
		if strings.HasPrefix(s, prefix) && (i == 0 || s != cands[i-1]) {
			fmt.Fprintln(w, s)
		}
	}
}

// Script returns the script that completes colo's command lines in the
// shell named (bash, zsh or fish), false for another: the script asks
// colo __complete WORD… PARTIAL for the candidates, and completes file
// names when it has none.
func Script(shell string) (string, bool) {
	switch shell {
	case "bash":
		return bashCompletion, true
	case "zsh":
		return "autoload -U +X bashcompinit && bashcompinit\n" + bashCompletion, true
	case "fish":
		return fishCompletion, true
	}
	return "", false
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
