package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
)

// The command-line conventions every colo command follows:
//
//   - --json[=FILE] writes the command's result as one JSON document: on
//     standard output when given alone or as --json=- (and --json -), to
//     FILE otherwise (--json FILE is accepted when FILE ends in .json).
//     While the JSON goes to standard output nothing else does: the human
//     lines and tables go to standard error.
//   - Every JSON document colo writes is an object that starts with the
//     build ("version", "vcs_revision", "vcs_modified", "go") and the run
//     ("command", "args" and "options", the final value of every flag), so
//     a run can be repeated from its JSON. A result that is a list is under
//     "results".
//   - -o - means standard output wherever -o names one file.
//   - The number of machines is --machines (-k for short); the older
//     spellings still work but are not listed.
//   - A mistyped command or flag gets a "did you mean".

// buildInfo is what the binary knows of its own build.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified *bool  `json:"vcs_modified,omitempty"`
	Go       string `json:"go"`
}

// readBuild reads the module version and the version-control stamp of the
// running binary (runtime/debug.ReadBuildInfo). A binary built outside a
// module, or by go test, has version "(devel)" and no revision.
func readBuild() buildInfo {
	b := buildInfo{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			b.Modified = &m
		}
	}
	return b
}

// String is the line colo version prints.
func (b buildInfo) String() string {
	s := "colo " + b.Version
	if b.Revision != "" {
		s += ", revision " + b.Revision
		if b.Modified != nil && *b.Modified {
			s += " (modified)"
		}
	}
	if b.Time != "" {
		s += ", committed " + b.Time
	}
	return s + ", " + b.Go + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// runRecord heads every JSON document: the build and the command line.
type runRecord struct {
	buildInfo
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Options map[string]string `json:"options"`
}

// record describes the run of f: its positional arguments and the final
// value of every flag that is not an alias. Secrets (a token) are
// recorded as set or not, never in clear.
func (f *cmdFlags) record() runRecord {
	r := runRecord{buildInfo: readBuild(), Command: "colo " + f.Name(), Args: f.pos, Options: map[string]string{}}
	if r.Args == nil {
		r.Args = []string{}
	}
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.aliases[fl.Name]; alias {
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

// stamp returns the JSON of v headed by the run record: the fields of v
// follow the record's when v is an object; any other v is "results".
func stamp(rec runRecord, v any) ([]byte, error) {
	head, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1]) // without its closing brace
	switch body = bytes.TrimSpace(body); {
	case len(body) >= 2 && body[0] == '{':
		if inner := bytes.TrimSpace(body[1 : len(body)-1]); len(inner) > 0 {
			b.WriteByte(',')
			b.Write(inner)
		}
	default:
		b.WriteString(`,"results":`)
		b.Write(body)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// writeJSON writes v, headed by the run record of the command's flags, to
// path ("-": standard output).
func writeJSON(e *env, path string, v any) error {
	b, err := e.stamp(v)
	if err != nil {
		return err
	}
	return writeOutput(e, path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeJSONLine is writeJSON on one line, for outputs read as JSON Lines
// (the nodes of one mpirun share its standard output).
func writeJSONLine(e *env, path string, v any) error {
	b, err := e.stamp(v)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return err
	}
	line.WriteByte('\n')
	return writeOutput(e, path, func(w io.Writer) error {
		_, err := w.Write(line.Bytes())
		return err
	})
}

// stamp is stamp with the record of the command's parsed flags.
func (e *env) stamp(v any) ([]byte, error) {
	var rec runRecord
	if e.flags != nil {
		rec = e.flags.record()
	} else {
		rec = runRecord{buildInfo: readBuild(), Args: []string{}, Options: map[string]string{}}
	}
	return stamp(rec, v)
}

// jsonFlag is --json[=FILE]: "" is off, "-" standard output.
type jsonFlag struct{ path string }

func (j *jsonFlag) String() string {
	if j == nil {
		return ""
	}
	return j.path
}

func (j *jsonFlag) Set(s string) error {
	switch s {
	case "true":
		j.path = "-"
	case "false":
		j.path = ""
	case "":
		return errors.New("want a file name, or - for standard output")
	default:
		j.path = s
	}
	return nil
}

// IsBoolFlag lets --json stand alone.
func (j *jsonFlag) IsBoolFlag() bool { return true }

// jsonOption registers --json[=FILE] on f; what is the document's
// content, as in "the summary".
func (f *cmdFlags) jsonOption(what string) *jsonFlag {
	j := &jsonFlag{}
	f.Var(j, "json", "write "+what+" as JSON to standard output (alone or -), or to `FILE`; nothing else then goes to standard output")
	f.json = j
	return j
}

// alias registers name as another spelling of the flag primary: it sets
// the same value, is not listed by -h and not recorded in the JSON.
func (f *cmdFlags) alias(name, primary string) {
	p := f.Lookup(primary)
	if p == nil {
		panic("alias of an unknown flag " + primary)
	}
	f.Var(p.Value, name, "")
	if f.aliases == nil {
		f.aliases = map[string]string{}
	}
	f.aliases[name] = primary
}

// routeJSON sends the human output to standard error when the JSON goes
// to standard output.
func (f *cmdFlags) routeJSON() {
	e := f.e
	if f.json != nil && isStdout(f.json.path) && e.json == nil {
		e.json, e.out = e.out, e.errOut
	}
}

// unrouteJSON undoes routeJSON, for a command that writes no JSON after
// all.
func (f *cmdFlags) unrouteJSON() {
	if e := f.e; e.json != nil {
		e.out, e.json = e.json, nil
	}
}

// flagName writes a flag as the help shows it: -k, --machines.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists the flags that are not aliases, naming the aliases of
// each.
func (f *cmdFlags) printFlags(w io.Writer) {
	var fls []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if _, ok := f.aliases[fl.Name]; !ok {
			fls = append(fls, fl)
		}
	})
	f.printFlagList(w, fls)
}

// printFlagList writes the flags fls, in that order, as printFlags does.
func (f *cmdFlags) printFlagList(w io.Writer, fls []*flag.Flag) {
	also := map[string][]string{}
	for a, p := range f.aliases {
		also[p] = append(also[p], flagName(a))
	}
	for _, fl := range fls {
		typ, usage := flag.UnquoteUsage(fl)
		if _, ok := fl.Value.(*jsonFlag); ok {
			typ = "[=FILE]"
		} else if typ != "" {
			typ = " " + typ
		}
		fmt.Fprintf(w, "  %s%s\n    \t%s", flagName(fl.Name), typ, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if a := also[fl.Name]; len(a) > 0 {
			sort.Strings(a)
			fmt.Fprintf(w, " (also %s)", strings.Join(a, ", "))
		}
		if d := fl.DefValue; d != "" && d != "0" && d != "false" {
			fmt.Fprintf(w, " (default %q)", d)
		}
		fmt.Fprintln(w)
	}
}

// suggest returns the candidate closest to s in edit distance, when it is
// close enough to be a typing slip, or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, min(len(s), len(best))/3) {
		return ""
	}
	return best
}

// levenshtein is the edit distance of a and b (insertions, deletions and
// substitutions of bytes), with a transposition of neighbours counted as
// one edit.
func levenshtein(a, b string) int {
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

// didYouMean appends a suggestion for an undefined flag to err.
func (f *cmdFlags) didYouMean(err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return err
	}
	if why, ok := f.refused[strings.TrimPrefix(msg, undefined)]; ok {
		return fmt.Errorf("%s: %s", flagName(strings.TrimPrefix(msg, undefined)), why)
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	if s := suggest(strings.TrimPrefix(msg, undefined), names); s != "" {
		if p, ok := f.aliases[s]; ok {
			s = p
		}
		return fmt.Errorf("%s (did you mean %s?)", msg, flagName(s))
	}
	return err
}

// drop removes the flags names from f, so that -h does not list them and
// the command line refuses them, saying why (a mode that does not take
// them). An alias of a dropped flag goes with it.
func (f *cmdFlags) drop(why string, names ...string) {
	gone := map[string]bool{}
	for _, n := range names {
		gone[n] = true
	}
	for a, p := range f.aliases {
		if gone[p] {
			gone[a] = true
			delete(f.aliases, a)
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
	f.refuse(why, slices.Collect(maps.Keys(gone))...)
}

// refuse records why the flags names, which f does not have, are not
// taken, for the error that meets one on the command line.
func (f *cmdFlags) refuse(why string, names ...string) {
	if f.refused == nil {
		f.refused = map[string]string{}
	}
	for _, n := range names {
		f.refused[n] = why
	}
}

// stampFile heads the JSON document a library wrote at path with the run
// record, as writeJSON does for the command's own.
func stampFile(e *env, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s: not JSON", path)
	}
	return writeJSON(e, path, json.RawMessage(b))
}
