package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Flags is the flag set of one command, with its usage text, the other
// spellings of its flags, the flags it refuses and why, and the
// positional arguments its last parse found.
type Flags struct {
	*flag.FlagSet
	Usage string // "colo partition [flags] FILE -o DIR"
	About string // a paragraph on what the command does
	// JSON is --json when the command has it (JSONOption).
	JSON *JSONFlag
	// Aliases maps other spellings of a flag to the flag (Alias).
	Aliases map[string]string
	// Pos are the positional arguments Split found.
	Pos []string
	// Sections, when set, group the flags in -h (PrintSections).
	Sections []Section
	// Refused maps the flags this command does not take (Drop, Refuse)
	// to why, for the error that names them.
	Refused map[string]string
	// Program, when set, makes the first positional argument the start
	// of another program's command line, which Split leaves whole: its
	// flags are the program's, as after "--" (colo run PROGRAM ARGS, as
	// torchrun takes its script's).
	Program bool
}

// New returns the empty flag set of the command name; it writes nothing
// itself (errors are returned).
func New(name, usage, about string) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{FlagSet: fs, Usage: usage, About: about}
}

// Split parses flags and positional arguments in any order (flags may
// follow the file names; all after "--" is positional, and with Program
// all from the first positional argument on) and returns the positional
// ones. Its error is the flag package's (flag.ErrHelp for -h).
func (f *Flags) Split(args []string) ([]string, error) {
	args = f.JoinJSON(args)
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			return nil, err
		}
		if f.NArg() == 0 {
			break
		}
		rest := f.Args()
		if f.Program || len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// JoinJSON turns "--json FILE" into "--json=FILE" when FILE is - or ends
// in .json, the forms a file-valued --json took before it could stand
// alone.
func (f *Flags) JoinJSON(args []string) []string {
	if f.JSON == nil {
		return args
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--json" || a == "-json") && i+1 < len(args) {
			next := args[i+1]
			if next == "-" || (strings.HasSuffix(strings.ToLower(next), ".json") && !strings.HasPrefix(next, "-")) {
				out = append(out, a+"="+next)
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// CheckArgs checks that the positional arguments pos that Split found in
// args number from lo to hi (hi < 0: no bound). An argument too many
// that follows a --json standing alone is named as --json's file, which
// is written --json=FILE (only a FILE ending in .json, or -, may follow
// it after a space).
func (f *Flags) CheckArgs(args, pos []string, lo, hi int) error {
	if len(pos) < lo {
		return fmt.Errorf("expected %s, got %d argument(s)", ArgWord(lo, hi), len(pos))
	}
	if hi < 0 || len(pos) <= hi {
		return nil
	}
	err := fmt.Errorf("expected %s, got %d: %s", ArgWord(lo, hi), len(pos), strings.Join(pos, " "))
	if f.JSON == nil {
		return err
	}
	for i, a := range args[:max(len(args)-1, 0)] {
		if a == "--" {
			break
		}
		if (a == "--json" || a == "-json") && slices.Contains(pos, args[i+1]) {
			return fmt.Errorf("%w (for --json's file write --json=%s)", err, args[i+1])
		}
	}
	return err
}

// ArgWord says how many positional arguments a command takes, from lo to
// hi (hi < 0: no bound), for the error that counts them.
func ArgWord(lo, hi int) string {
	switch {
	case lo == hi && lo == 1:
		return "one file argument"
	case lo == hi:
		return fmt.Sprintf("%d arguments", lo)
	case hi < 0:
		return fmt.Sprintf("at least %d argument(s)", lo)
	default:
		return fmt.Sprintf("%d to %d arguments", lo, hi)
	}
}

// PrintUsage writes the usage, the paragraph and the flags (by section
// when Sections is set).
func (f *Flags) PrintUsage(w io.Writer) {
	if f.Sections != nil {
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", f.Usage, f.About)
		f.PrintSections(w, f.Sections)
		return
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", f.Usage, f.About)
	f.PrintFlags(w)
}

// Record describes the run of f: its positional arguments and the final
// value of every flag that is not an alias. Secrets (a flag whose name
// holds "token") are recorded as set or not, never in clear.
func (f *Flags) Record() Record {
	r := Record{Build: ReadBuild(), Command: "colo " + f.Name(), Args: f.Pos, Options: map[string]string{}}
	if r.Args == nil {
		r.Args = []string{}
	}
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.Aliases[fl.Name]; alias {
			return
		}
		v := fl.Value.String()
		if strings.Contains(fl.Name, "token") && v != "" {
			v = "(set)"
		}
		r.Options[fl.Name] = v
	})
	return r
}

// JSONFlag is --json[=FILE]: "" is off, "-" standard output.
type JSONFlag struct{ Path string }

func (j *JSONFlag) String() string {
	if j == nil {
		return ""
	}
	return j.Path
}

// Set takes a file name, - for standard output, or true and false (the
// flag standing alone).
func (j *JSONFlag) Set(s string) error {
	switch s {
	case "true":
		j.Path = "-"
	case "false":
		j.Path = ""
	case "":
		return errors.New("want a file name, or - for standard output")
	default:
		j.Path = s
	}
	return nil
}

// IsBoolFlag lets --json stand alone.
func (j *JSONFlag) IsBoolFlag() bool { return true }

// JSONOption registers --json[=FILE] on f; what is the document's
// content, as in "the summary".
func (f *Flags) JSONOption(what string) *JSONFlag {
	j := &JSONFlag{}
	f.Var(j, "json", "write "+what+" as JSON to standard output (alone or -), or to `FILE`; nothing else then goes to standard output")
	f.JSON = j
	return j
}

// Alias registers name as another spelling of the flag primary: it sets
// the same value, is not listed by -h and not recorded in the JSON. An
// unknown primary is a programmer's error and panics.
func (f *Flags) Alias(name, primary string) {
	p := f.Lookup(primary)
	if p == nil {
		panic("alias of an unknown flag " + primary)
	}
	f.Var(p.Value, name, "")
	if f.Aliases == nil {
		f.Aliases = map[string]string{}
	}
	f.Aliases[name] = primary
}

// Primary returns the flag that name spells (an alias's primary).
func (f *Flags) Primary(name string) string {
	if p, ok := f.Aliases[name]; ok {
		return p
	}
	return name
}

// FlagName writes a flag as the help shows it: -k, --machines.
func FlagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// PrintFlags lists the flags that are not aliases, naming the aliases of
// each.
func (f *Flags) PrintFlags(w io.Writer) {
	var fls []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if _, ok := f.Aliases[fl.Name]; !ok {
			fls = append(fls, fl)
		}
	})
	f.PrintFlagList(w, fls)
}

// PrintFlagList writes the flags fls, in that order, as PrintFlags does.
func (f *Flags) PrintFlagList(w io.Writer, fls []*flag.Flag) {
	also := map[string][]string{}
	for a, p := range f.Aliases {
		also[p] = append(also[p], FlagName(a))
	}
	for _, fl := range fls {
		typ, usage := flag.UnquoteUsage(fl)
		if _, ok := fl.Value.(*JSONFlag); ok {
			typ = "[=FILE]"
		} else if typ != "" {
			typ = " " + typ
		}
		fmt.Fprintf(w, "  %s%s\n    \t%s", FlagName(fl.Name), typ, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if a := also[fl.Name]; len(a) > 0 {
			sort.Strings(a)
			fmt.Fprintf(w, " (also %s)", strings.Join(a, ", "))
		}
		if d := fl.DefValue; d != "" && d != "0" && d != "false" {
			fmt.Fprintf(w, " (default %s)", quoteDefault(fl, d))
		}
		fmt.Fprintln(w)
	}
}

// quoteDefault writes the default d of fl as the flag package does: a
// string quoted, a number or a duration as it is typed (default 4, not
// "4").
func quoteDefault(fl *flag.Flag, d string) string {
	if g, ok := fl.Value.(flag.Getter); ok {
		if _, str := g.Get().(string); !str {
			return d
		}
	}
	return strconv.Quote(d)
}

// Section is a titled group of a command's flags in its -h.
type Section struct {
	Title string
	Flags []string
}

// PrintSections writes f's flags section by section, each flag once,
// and those of no section last under "Other".
func (f *Flags) PrintSections(w io.Writer, sections []Section) {
	listed := map[string]bool{}
	for _, s := range sections {
		var fls []*flag.Flag
		for _, name := range s.Flags {
			if fl := f.Lookup(name); fl != nil && !listed[name] {
				fls = append(fls, fl)
				listed[name] = true
			}
		}
		if len(fls) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", s.Title)
		f.PrintFlagList(w, fls)
	}
	var rest []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.Aliases[fl.Name]; !alias && !listed[fl.Name] {
			rest = append(rest, fl)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		f.PrintFlagList(w, rest)
	}
}

// Unsectioned returns f's flags that no section of sections lists.
func (f *Flags) Unsectioned(sections []Section) []string {
	var out []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.Aliases[fl.Name]; alias {
			return
		}
		for _, s := range sections {
			if slices.Contains(s.Flags, fl.Name) {
				return
			}
		}
		out = append(out, fl.Name)
	})
	return out
}

// DidYouMean appends a suggestion for an undefined flag to err, or says
// why a refused flag is not taken.
func (f *Flags) DidYouMean(err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return err
	}
	if why, ok := f.Refused[strings.TrimPrefix(msg, undefined)]; ok {
		return fmt.Errorf("%s: %s", FlagName(strings.TrimPrefix(msg, undefined)), why)
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	typed := strings.TrimPrefix(msg, undefined)
	if s := Suggest(typed, names); s != "" {
		return fmt.Errorf("%s (did you mean %s?)", msg, FlagName(f.Primary(s)))
	}
	var primaries []string
	for _, n := range names {
		primaries = append(primaries, f.Primary(n))
	}
	if ws := SuggestWords(typed, primaries); len(ws) > 0 {
		for i, w := range ws {
			ws[i] = FlagName(w)
		}
		if len(ws) == 1 {
			return fmt.Errorf("%s (did you mean %s?)", msg, ws[0])
		}
		return fmt.Errorf("%s (did you mean one of %s?)", msg, strings.Join(ws, ", "))
	}
	return err
}

// maxWordSuggestions bounds the candidates SuggestWords returns: more
// would be a list, not a suggestion.
const maxWordSuggestions = 4

// SuggestWords returns the candidates, sorted and without repeats, of
// which s is a whole word or a run of whole words (words between
// hyphens), as "passes" is of "max-passes" and "bandwidth" of
// "link-bandwidth": a flag typed by a part of its name, too far from
// the name for Suggest. It returns none for an s shorter than three
// letters or matching more than four candidates.
func SuggestWords(s string, candidates []string) []string {
	s = strings.ToLower(s)
	if len(s) < 3 {
		return nil
	}
	var out []string
	for _, c := range candidates {
		if strings.Contains("-"+strings.ToLower(c)+"-", "-"+s+"-") && c != s && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) > maxWordSuggestions {
		return nil
	}
	sort.Strings(out)
	return out
}

// Drop removes the flags names from f, so that -h does not list them and
// the command line refuses them, saying why (a mode that does not take
// them). An alias of a dropped flag goes with it.
func (f *Flags) Drop(why string, names ...string) {
	gone := map[string]bool{}
	for _, n := range names {
		gone[n] = true
	}
	for a, p := range f.Aliases {
		if gone[p] {
			gone[a] = true
			delete(f.Aliases, a)
		}
	}
	fs := flag.NewFlagSet(f.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.VisitAll(func(fl *flag.Flag) {
		if gone[fl.Name] {
			return
		}
		fs.Var(fl.Value, fl.Name, fl.Usage)
		fs.Lookup(fl.Name).DefValue = fl.DefValue
	})
	f.FlagSet = fs
	f.Refuse(why, slices.Collect(maps.Keys(gone))...)
}

// Refuse records why the flags names, which f does not have, are not
// taken, for the error that meets one on the command line.
func (f *Flags) Refuse(why string, names ...string) {
	if f.Refused == nil {
		f.Refused = map[string]string{}
	}
	for _, n := range names {
		f.Refused[n] = why
	}
}

// Suggest returns the candidate closest to s in edit distance, when it is
// close enough to be a typing slip, or "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := Levenshtein(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, min(len(s), len(best))/3) {
		return ""
	}
	return best
}

// Levenshtein is the edit distance of a and b (insertions, deletions and
// substitutions of bytes), with a transposition of neighbours counted as
// one edit. O(len(a)·len(b)).
func Levenshtein(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}

// Enum is a flag value that takes one of a list of string values.
type Enum[T ~string] struct {
	p      *T
	values []T
}

// NewEnum returns the flag value that sets *p to one of values.
func NewEnum[T ~string](p *T, values []T) *Enum[T] {
	return &Enum[T]{p: p, values: values}
}

func (e *Enum[T]) String() string {
	if e == nil || e.p == nil {
		return ""
	}
	return string(*e.p)
}

// Values lists the flag's values, for completion (Valuer).
func (e *Enum[T]) Values() []string {
	names := make([]string, len(e.values))
	for i, v := range e.values {
		names[i] = string(v)
	}
	return names
}

// Set takes one of the values, and refuses anything else naming them.
func (e *Enum[T]) Set(s string) error {
	for _, v := range e.values {
		if string(v) == s {
			*e.p = v
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(e.Values(), ", "))
}
