package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/transport/tcp/tcptest"
)

// TestTLSFlagErrors: --tls-cert, --tls-key and --tls-ca go together, and
// a file that cannot be read is named, before anything starts.
func TestTLSFlagErrors(t *testing.T) {
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := ca.WriteNode(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tcptest.NewCA("another")
	if err != nil {
		t.Fatal(err)
	}
	alien, err := other.WriteNode(dir, "alien")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "--role", "machine", "--scheduler", "127.0.0.1:1", "--token", "t", "--tls-cert", f.Cert}, "--tls-key is missing"},
		{[]string{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0", "--token", "t", "--num-servers", "1", "--num-workers", "1", "--tls-cert", f.Cert, "--tls-key", f.Key}, "--tls-ca is missing"},
		{[]string{"node", "--role", "machine", "--scheduler", "127.0.0.1:1", "--token", "t", "--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", missing}, "open " + missing},
		{[]string{"node", "--role", "machine", "--scheduler", "127.0.0.1:1", "--token", "t", "--tls-cert", f.Key, "--tls-key", f.Key, "--tls-ca", f.CA}, "tls certificate " + f.Key},
		{[]string{"launch", "--tls-ca", f.CA}, "--tls-cert is missing"},
		{[]string{"train", news20(t), "--machines", "2", "--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}, "secure the links between processes: add --processes or --netns"},
		{[]string{"train", news20(t), "--machines", "2", "--processes", "--tls-cert", f.Cert, "--tls-ca", f.CA}, "--tls-key is missing"},
		{[]string{"launch", "--tls-cert", alien.Cert, "--tls-key", alien.Key, "--tls-ca", f.CA}, "tls certificate " + alien.Cert + " against the CA " + f.CA + ": x509: certificate signed by unknown authority"},
	} {
		cmd := exec.Command(coloBin, c.args...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("colo %s: %v\n%s\nwant exit status 2 and %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}

// TestTLSProcesses runs a scheduler and a machine as processes whose links
// are mutual TLS, the machine's files given in its environment. A node
// with the token but another CA's certificate, and one with the token but
// no TLS, are refused at once, with the reason on both sides, and the job
// then runs to its end.
func TestTLSProcesses(t *testing.T) {
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tcptest.NewCA("another")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := ca.WriteNode(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	alien, err := other.WriteNode(dir, "alien")
	if err != nil {
		t.Fatal(err)
	}
	tlsArgs := func(f tcptest.Files) []string {
		return []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
	}
	sc, addr := startScheduler(t, append([]string{"--token", "right", "--num-servers", "1", "--num-workers", "1", "--join-timeout", "20s"}, tlsArgs(f)...)...)
	// Another CA's certificate, trusting that CA (colo node refuses a
	// certificate that its --tls-ca did not sign before it dials).
	intruder := startChild(t, "intruder", append([]string{"node", "--role", "machine", "--scheduler", addr, "--token", "right"}, tlsArgs(alien)...)...)
	plain := startChild(t, "plain", "node", "--role", "machine", "--scheduler", addr, "--token", "right")
	wait(t, intruder, 10*time.Second)
	wait(t, plain, 10*time.Second)
	if intruder.err == nil || !strings.Contains(intruder.errOut.String(), "refused this node") || !strings.Contains(intruder.errOut.String(), "certificate signed by unknown authority") {
		t.Fatalf("intruder: %v\n%s", intruder.err, intruder.errOut.String())
	}
	if plain.err == nil || !strings.Contains(plain.errOut.String(), "this node runs TLS and the dialer does not") {
		t.Fatalf("plain: %v\n%s", plain.err, plain.errOut.String())
	}
	// The member gets its files from the environment.
	ok := &child{cmd: exec.Command(coloBin, "node", "--role", "machine", "--scheduler", addr, "--rounds", "2", "--batch", "10", "--keys", "100"), done: make(chan struct{}), name: "machine"}
	ok.cmd.Env = append(os.Environ(), "COLO_TOKEN=right", "COLO_TLS_CERT="+f.Cert, "COLO_TLS_KEY="+f.Key, "COLO_TLS_CA="+f.CA)
	ok.cmd.Stdout, ok.cmd.Stderr = &ok.out, &ok.errOut
	if err := ok.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { ok.err = ok.cmd.Wait(); close(ok.done) }()
	t.Cleanup(func() {
		ok.cmd.Process.Kill()
		<-ok.done
	})
	wait(t, ok, 20*time.Second)
	wait(t, sc, 20*time.Second)
	if ok.err != nil || sc.err != nil {
		t.Fatalf("machine: %v %s\nscheduler: %v %s", ok.err, ok.errOut.String(), sc.err, sc.errOut.String())
	}
	log := sc.errOut.String()
	for _, want := range []string{"remote error: tls: bad certificate", "a colo node without TLS"} {
		if !strings.Contains(log, want) {
			t.Errorf("the scheduler's log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("intruder: %s\nplain: %s\nscheduler:\n%s", lastLine(intruder.errOut.String()), lastLine(plain.errOut.String()), log)
}
