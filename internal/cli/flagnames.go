package cli

import (
	"regexp"
	"strings"
	"unicode"
)

// goField matches a Go field named with its value after it: "Machines 0",
// "L1 -1", "Heartbeat 0s", "Keys = 100000", "LR NaN", "LR +Inf".
var goField = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*)( =)? (-?[0-9]|NaN\b|[+-]Inf\b)`)

// jsonPath matches a JSON path of a job's field: config.max_steps,
// config.checkpoint.every, checkpoint.dir.
var jsonPath = regexp.MustCompile(`\b(?:config\.|data\.)?((?:checkpoint|config)\.[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*|config\.[a-z][a-z0-9_]*)\b`)

// FlagNames returns msg, an error of a configuration filled from f, with
// each field that names a flag of f said as that flag: the Go field
// (launch: "Machines 0, at least 1") or its JSON path (train:
// "config.checkpoint.dir … without checkpoint.every"). Fields that name
// no flag stay as they are, and so does what follows "--job-file ": an
// error of a job file, whose fields are its own, not the command line's
// (flags that describe a job are refused beside a job file). renamed maps
// the Go fields whose flag is not their name in kebab case to that flag.
func (f *Flags) FlagNames(msg string, renamed map[string]string) string {
	if f == nil || f.FlagSet == nil {
		return msg
	}
	if i := strings.Index(msg, "--job-file "); i >= 0 {
		return f.FlagNames(msg[:i], renamed) + msg[i:]
	}
	has := func(name string) bool {
		_, alias := f.Aliases[name]
		return name != "" && !alias && f.Lookup(name) != nil
	}
	if has("updater") { // the update rule's fields, under the flags of the rule
		msg = strings.ReplaceAll(msg, "config.rule: update: Name ", "--updater ")
		msg = strings.ReplaceAll(msg, "config.rule: update: ", "")
	}
	if has("async-step") { // its values are words, which goField does not take
		msg = strings.ReplaceAll(msg, "AsyncStep ", "--async-step ")
	}
	msg = jsonPath.ReplaceAllStringFunc(msg, func(m string) string {
		parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(m, "config."), "data."), ".")
		for i := range parts {
			parts[i] = strings.ReplaceAll(parts[i], "_", "-")
		}
		// The whole path (checkpoint-every), its last field (max-steps),
		// then the struct holding it (checkpoint for checkpoint.dir).
		for _, c := range []string{strings.Join(parts, "-"), parts[len(parts)-1], parts[0]} {
			if has(c) {
				return "--" + c
			}
		}
		return m
	})
	return goField.ReplaceAllStringFunc(msg, func(m string) string {
		sub := goField.FindStringSubmatch(m)
		name, ok := renamed[sub[1]]
		if !ok {
			name = Kebab(sub[1])
		}
		if has(name) {
			return "--" + name + strings.TrimPrefix(m, sub[1])
		}
		return m
	})
}

// Kebab spells a Go field as a flag: MaxSteps is max-steps, L1 is l1.
func Kebab(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
