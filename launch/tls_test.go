package launch

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/transport/tcp/tcptest"
)

// TestTLSFlagsLoad: all three flags or none; the missing one and a file
// that cannot be read are named.
func TestTLSFlagsLoad(t *testing.T) {
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := ca.WriteNode(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := (TLSFlags{}).Load(); cfg != nil || err != nil {
		t.Fatalf("no flags: %v, %v", cfg, err)
	}
	if cfg, err := (TLSFlags{f.Cert, f.Key, f.CA}).Load(); cfg == nil || err != nil {
		t.Fatalf("all three: %v", err)
	}
	missing := filepath.Join(dir, "nope.pem")
	for _, c := range []struct {
		flags TLSFlags
		want  string
	}{
		{TLSFlags{Cert: f.Cert}, "--tls-key is missing"},
		{TLSFlags{Cert: f.Cert, Key: f.Key}, "--tls-ca is missing"},
		{TLSFlags{Key: f.Key, CA: f.CA}, "--tls-cert is missing"},
		{TLSFlags{f.Cert, f.Key, missing}, "open " + missing},
		{TLSFlags{f.Cert, f.CA, f.CA}, "tls key " + f.CA},
	} {
		if _, err := c.flags.Load(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s", c.flags, err, c.want)
		}
	}
	env, err := (TLSFlags{"a.crt", "a.key", "/ca.crt"}).Env()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := filepath.Abs(".")
	want := []string{"COLO_TLS_CERT=" + filepath.Join(wd, "a.crt"), "COLO_TLS_KEY=" + filepath.Join(wd, "a.key"), "COLO_TLS_CA=/ca.crt"}
	if !slices.Equal(env, want) {
		t.Fatalf("Env: %q, want %q", env, want)
	}
}

// TestDMLCEnvironmentTLS is TestDMLCEnvironment with every link over
// mutual TLS, the files, like the rest, from the environment alone.
func TestDMLCEnvironmentTLS(t *testing.T) {
	colotest.Need(t, coloBin)
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.WriteNode(t.TempDir(), "node")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var port int
	env := func(role string) []string {
		return []string{"DMLC_ROLE=" + role, "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_PS_ROOT_PORT=" + strconv.Itoa(port),
			"DMLC_NUM_SERVER=1", "DMLC_NUM_WORKER=1", "COLO_TOKEN=dmlc-test", "COLO_JSON=true",
			"COLO_TLS_CERT=" + f.Cert, "COLO_TLS_KEY=" + f.Key, "COLO_TLS_CA=" + f.CA}
	}
	scheduler := func(p int) Spec {
		port = p
		return Spec{Name: "scheduler", Args: []string{"node"}, Env: env("scheduler")}
	}
	sup := NewSupervisor(coloBin, Loopback{})
	startScheduler(ctx, t, sup, scheduler)
	server := sup.Start(ctx, Spec{Name: "server", Host: 1, Args: []string{"node"}, Env: env("server"), Stdout: true})
	worker := sup.Start(ctx, Spec{Name: "worker", Host: 2, Args: []string{"node"}, Env: env("worker"), Stdout: true})
	if err := sup.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, append(server.Stdout(), worker.Stdout()...), 1, 1)
	// The files did take effect: a worker without them is refused.
	sup = NewSupervisor(coloBin, Loopback{})
	startScheduler(ctx, t, sup, scheduler)
	sup.Start(ctx, Spec{Name: "server", Host: 1, Args: []string{"node"}, Env: env("server")})
	sup.Start(ctx, Spec{Name: "worker", Host: 2, Args: []string{"node"}, Env: env("worker")[:7]})
	if err := sup.Wait(ctx); err == nil || !strings.Contains(err.Error(), "this node runs TLS and the dialer does not") {
		t.Fatalf("a worker without TLS: %v", err)
	}
}
