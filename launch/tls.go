package launch

import (
	"crypto/tls"
	"flag"
	"fmt"
	"path/filepath"

	"colo/transport/tcp"
)

// TLSFlags are the flags that run a node's links over mutual TLS (see
// tcp.Config.TLS): --tls-cert, the node's certificate, --tls-key, its
// private key, and --tls-ca, the certificate of the CA that signs every
// node's, all PEM files. All three or none. The command that starts
// processes (colo launch, colo train --processes) passes them on to its
// children in their environment (COLO_TLS_CERT, …).
type TLSFlags struct {
	Cert, Key, CA string
}

// Register adds --tls-cert, --tls-key and --tls-ca to fs.
func (t *TLSFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.Cert, "tls-cert", "", "run every link over mutual TLS 1.3: this node's certificate (PEM); with --tls-key and --tls-ca")
	fs.StringVar(&t.Key, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&t.CA, "tls-ca", "", "the certificate (PEM) of the CA that signs every node's certificate; peers without one are refused")
}

// Enabled reports whether any of the flags is set.
func (t TLSFlags) Enabled() bool { return t.Cert != "" || t.Key != "" || t.CA != "" }

// Load returns the TLS configuration of the flags, nil when none is set.
// An error names the missing flag, or the file that cannot be read or is
// not what it should be.
func (t TLSFlags) Load() (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	for _, f := range []struct{ name, v string }{{"--tls-cert", t.Cert}, {"--tls-key", t.Key}, {"--tls-ca", t.CA}} {
		if f.v == "" {
			return nil, fmt.Errorf("%s is missing: TLS needs --tls-cert, --tls-key and --tls-ca", f.name)
		}
	}
	cfg, err := tcp.LoadTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert, --tls-key, --tls-ca: %w", err)
	}
	return cfg, nil
}

// Env returns the environment that gives a child process the same
// flags, with absolute paths; nil when none is set.
func (t TLSFlags) Env() ([]string, error) {
	if !t.Enabled() {
		return nil, nil
	}
	var env []string
	for _, f := range []struct{ flag, v string }{{"tls-cert", t.Cert}, {"tls-key", t.Key}, {"tls-ca", t.CA}} {
		abs, err := filepath.Abs(f.v)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", f.flag, err)
		}
		env = append(env, EnvName(f.flag)+"="+abs)
	}
	return env, nil
}
