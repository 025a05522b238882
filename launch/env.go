package launch

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"strings"
)

// FromEnv sets every flag of fs not given on the command line from its
// environment variable, COLO_ and the flag's name in upper case with '-'
// as '_' (--num-servers: COLO_NUM_SERVERS), when getenv returns it
// non-empty. The command line wins. Flags set either way count as set
// (fs.Visit). Call it after fs.Parse; an error names the variable and its
// value.
func FromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		name := EnvName(f.Name)
		if v := getenv(name); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment variable %s=%q: %v", name, v, e)
			}
		}
	})
	return err
}

// EnvName returns the environment variable FromEnv reads for flag:
// "num-servers" gives COLO_NUM_SERVERS.
func EnvName(flag string) string {
	return "COLO_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// NewToken returns a random cluster token (24 hex digits) for a cluster
// this process starts.
func NewToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
