package launch

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	role := fs.String("role", "", "")
	scheduler := fs.String("scheduler", "", "")
	servers := fs.Int("num-servers", 0, "")
	workers := fs.Int("num-workers", 0, "")
	token := fs.String("token", "", "")
	rank := fs.Int("rank", -1, "")
	if err := fs.Parse([]string{"--role", "server", "--num-workers", "3"}); err != nil {
		t.Fatal(err)
	}
	envs := map[string]string{"COLO_ROLE": "worker", "COLO_SCHEDULER": "10.0.0.1:7000", "COLO_NUM_SERVERS": "2", "COLO_TOKEN": "s3cret", "COLO_NUM_WORKERS": "9"}
	getenv := func(k string) string { return envs[k] }
	if err := FromEnv(fs, getenv); err != nil {
		t.Fatal(err)
	}
	if *role != "server" || *workers != 3 {
		t.Fatalf("the command line lost: role %q workers %d", *role, *workers)
	}
	if *scheduler != "10.0.0.1:7000" || *servers != 2 || *token != "s3cret" || *rank != -1 {
		t.Fatalf("environment not read: scheduler %q servers %d token %q rank %d", *scheduler, *servers, *token, *rank)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["scheduler"] || !set["role"] || set["rank"] {
		t.Errorf("set flags %v", set)
	}
	envs["COLO_RANK"] = "two"
	if err := FromEnv(fs, getenv); err == nil || !strings.Contains(err.Error(), `COLO_RANK="two"`) {
		t.Fatalf("bad COLO_RANK: %v", err)
	}
	if EnvName("join-timeout") != "COLO_JOIN_TIMEOUT" {
		t.Errorf("EnvName(join-timeout) = %s", EnvName("join-timeout"))
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 24 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("tokens %q %q", a, b)
	}
}
