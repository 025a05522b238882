// Package cli holds the command-line conventions every colo command
// follows, apart from what any one command does:
//
//   - --json[=FILE] writes the command's result as one JSON document: on
//     standard output when given alone or as --json=- (and --json -), to
//     FILE otherwise (--json FILE is accepted when FILE ends in .json;
//     see [Flags.JoinJSON]).
//   - Every JSON document is an object that starts with the build
//     ("version", "vcs_revision", "vcs_modified", "go") and the run
//     ("command", "args" and "options", the final value of every flag), so
//     a run can be repeated from its JSON ([Stamp], [Flags.Record]). A
//     result that is a list is under "results".
//   - Older spellings of a flag are aliases: they set the same value, are
//     not listed by -h and not recorded ([Flags.Alias]).
//   - A mistyped command or flag gets a "did you mean" ([Suggest],
//     [Flags.DidYouMean]); a flag a mode does not take is refused with the
//     reason ([Flags.Drop], [Flags.Refuse]).
//   - The errors of configurations filled from flags name the flags, not
//     the Go fields or JSON paths ([Flags.FlagNames]).
//   - Shell completion lists a command's flags from the very flag set it
//     parses ([Flags.Complete]).
//
// Flags wraps a [flag.FlagSet]; it keeps no package-level state. All of
// it is linear in the number of flags, but for [Levenshtein], which is
// quadratic in the lengths of its two words.
package cli
