package distparsa

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"colo/cluster"
	"colo/graph"
	"colo/placement"
)

// runNodes runs job on W machines of a cluster in this process, each
// reading the data file itself (RunNode), and returns their results.
func runNodes(t *testing.T, job Job) []*Result {
	t.Helper()
	if err := job.Validate(); err != nil {
		t.Fatal(err)
	}
	W := job.Config.Workers
	cc := cluster.DefaultConfig()
	cc.Machines, cc.NumKeys, cc.Width, cc.Clock = W, job.Keys, job.K, job.Config.Clock()
	ctx := context.Background()
	c, err := cluster.Start(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	results := make([]*Result, W)
	var wg sync.WaitGroup
	for r := range W {
		wg.Go(func() {
			n := c.WorkerNode(r)
			res, err := RunNode(ctx, n, job)
			results[r] = res
			n.Finish(err)
		})
	}
	wg.Wait()
	if err := c.Scheduler().Wait(); err != nil {
		t.Fatalf("W=%d τ=%v shared=%v: %v", W, job.Config.Tau, job.SharedSpill, err)
	}
	return results
}

// TestRunNodeByRanges checks that machines sharing their spill directory,
// each parsing only its own range of the file's lines, write the
// placement the machines that each parse the whole file write, byte for
// byte (data.part, param.part, and summary.json but for the times), for
// W = 1..4 over libsvm with comment and blank lines and no newline at
// the end and over a SNAP edge list; and that they say how they read it.
func TestRunNodeByRanges(t *testing.T) {
	g0 := testGraph(t, 5, 900, 400)
	var svm bytes.Buffer
	if err := graph.WriteLibSVM(&svm, g0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(svm.String(), "\n"), "\n")
	var odd strings.Builder
	for i, l := range lines {
		if i%50 == 7 {
			odd.WriteString("# comment\n\n")
		}
		odd.WriteString(l)
		if i < len(lines)-1 {
			odd.WriteString("\n")
		}
	}
	var snap strings.Builder
	snap.WriteString("# FromNodeId\tToNodeId\n")
	rng := placement.NewRand(9)
	for range 3000 {
		fmt.Fprintf(&snap, "%d\t%d\n", rng.IntN(600)*2, rng.IntN(600)*2)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, data string
		lo         graph.LoadOptions
	}{
		{"g.svm", odd.String(), graph.DefaultLoadOptions()},
		{"g.txt", snap.String(), graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20}},
	} {
		data := filepath.Join(dir, c.name)
		if err := os.WriteFile(data, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := graph.Load(data, c.lo)
		if err != nil {
			t.Fatal(err)
		}
		for W := 1; W <= 4; W++ {
			cfg := Config{Workers: W}
			var out [2]string
			for x, shared := range []bool{false, true} {
				job := Job{Data: data, Format: string(c.lo.Format), IndexBase: c.lo.IndexBase, HashBits: c.lo.HashBits, K: 6, Seed: 3,
					Init: "global", Config: cfg, Out: filepath.Join(t.TempDir(), "out"), SpillDir: t.TempDir(), SharedSpill: shared,
					Keys: cfg.Layout(g, 6).NumKeys()}
				for r, res := range runNodes(t, job) {
					if want := map[bool]string{false: "whole", true: "range"}[shared && W > 1]; res.File == nil || res.File.Read != want {
						t.Fatalf("%s W=%d: machine %d read the file %+v, want %s", c.name, W, r, res.File, want)
					}
				}
				if shared {
					if left, _ := filepath.Glob(filepath.Join(job.SpillDir, "range-*")); len(left) != 0 {
						t.Errorf("%s W=%d: the ranges' rows are left behind: %v", c.name, W, left)
					}
				}
				out[x] = job.Out
			}
			for _, name := range []string{placement.DataPartFile, placement.ParamPartFile, placement.SummaryFile} {
				a, err1 := os.ReadFile(filepath.Join(out[0], name))
				b, err2 := os.ReadFile(filepath.Join(out[1], name))
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if name == placement.SummaryFile {
					a, b = withoutTimes(a), withoutTimes(b)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s W=%d: %s read by ranges differs from the whole file's", c.name, W, name)
				}
			}
		}
	}
}

// withoutTimes drops the lines of a summary that hold times.
func withoutTimes(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "seconds") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// TestPlainCopy: a compressed file gets a copy of its content in a
// directory of its own in the spill directory, which remove deletes; a
// plain file gets none.
func TestPlainCopy(t *testing.T) {
	text := []byte("1 3:1 5:1\n-1 2:1 4:1\n")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(text)
	zw.Close()
	dir, spill := t.TempDir(), t.TempDir()
	gz, plain := filepath.Join(dir, "d.svm.gz"), filepath.Join(dir, "d.svm")
	os.WriteFile(gz, z.Bytes(), 0o644)
	os.WriteFile(plain, text, 0o644)
	if c, remove, err := PlainCopy(plain, spill); c != "" || err != nil {
		t.Fatalf("a plain file: %q, %v; want no copy", c, err)
	} else {
		remove()
	}
	c, remove, err := PlainCopy(gz, spill)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(c); err != nil || !bytes.Equal(got, text) || filepath.Dir(filepath.Dir(c)) != spill {
		t.Fatalf("copy %s holds %q (%v)", c, got, err)
	}
	remove()
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Errorf("remove left %d entries in the spill directory", len(left))
	}
}
