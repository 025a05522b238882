package main

// The configurations' Validate errors name their fields, as every
// component's do (STYLE: "errors name the field and the bound"): the Go
// field (launch: "Machines 0, at least 1") or its JSON path (train:
// "config.checkpoint.dir … without checkpoint.every"). A user reached
// them through flags, so the command line says the flags instead:
// flagNames rewrites each field that names a flag of the command.

// flagNames returns msg with each field that names a flag of f said as
// that flag (cli.Flags.FlagNames); a nil f leaves msg as it is.
func (f *cmdFlags) flagNames(msg string) string {
	if f == nil {
		return msg
	}
	return f.FlagNames(msg, fieldFlags)
}

// fieldFlags are the fields whose flag is not their name in kebab case.
var fieldFlags = map[string]string{
	"StartTimeout": "join-timeout", // sched.Config, colo node's
}
