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
