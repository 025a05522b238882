package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"colo/app"
	"colo/app/embed"
	"colo/app/mf"
	"colo/features"
	"colo/graph"
	"colo/placement"
	"colo/train"
)

// randomSVM returns n libsvm lines of 3 classes over 40 features with
// values other than 1, drawn from seed.
func randomSVM(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "%d", r.IntN(3))
		f := 0
		for range 1 + r.IntN(6) {
			f += 1 + r.IntN(7)
			fmt.Fprintf(&b, " %d:%.3f", f, 0.5+r.Float64())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// defaultJob returns the default job of application name.
func defaultJob(t testing.TB, name string) train.Job {
	t.Helper()
	job, err := app.DefaultJob(name)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// openCached opens job placed, as the parent of its machines does, and
// writes its data cache with the machines' shares to a new directory:
// the whole graph, and what each machine opens from its share.
func openCached(t *testing.T, job train.Job) (want *app.Opened, p *placement.Placement, dir string) {
	t.Helper()
	want, p, err := app.OpenPlaced(job)
	if err != nil {
		t.Fatal(err)
	}
	return want, p, writeCache(t, want, p)
}

// writeCache writes the data cache of want placed by p, with the
// machines' shares, to a new directory and returns it.
func writeCache(t *testing.T, want *app.Opened, p *placement.Placement) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if ok, err := want.WriteCache(dir, p); !ok || err != nil {
		t.Fatalf("write the cache: %v, %v", ok, err)
	}
	return dir
}

// dropWholeGraph takes the whole training graph out of the cache dir: a
// machine that opens it then has its share alone to read.
func dropWholeGraph(t *testing.T, dir string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, "train.graph"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
}

// shardEdges returns the number of edges of g's samples rows.
func shardEdges(g *graph.Graph, rows []int32) int64 {
	var edges int64
	for _, u := range rows {
		edges += int64(g.SampleDegree(int(u)))
	}
	return edges
}

// TestShares: a machine opened from its share of the data cache, with
// the whole training graph gone from the cache, builds bit for bit the
// part it builds from the whole graph, on its own samples' edges alone
// and without the test graph, which only machine 0 scores; machine 0
// without a test file (it scores the training set) reads the
// whole graph.
func TestShares(t *testing.T) {
	for _, withTest := range []bool{false, true} {
		t.Run(fmt.Sprintf("test file %v", withTest), func(t *testing.T) {
			job := defaultJob(t, "lr")
			job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "train.svm", randomSVM(300, 1)), "random", 3
			if withTest {
				job.Data.Test = writeFile(t, "test.svm", randomSVM(50, 2))
			}
			want, p, dir := openCached(t, job)
			// Machine 0 without a test file needs the whole graph: open
			// it first, then take the whole graph away.
			first := 0
			if !withTest {
				first = 1
			}
			for r := range p.K {
				if r == 1 {
					dropWholeGraph(t, dir)
				}
				cached := job
				cached.Data.Cache, cached.Data.Share = dir, &r
				got, q, err := app.OpenPlaced(cached)
				if err != nil {
					t.Fatalf("machine %d: %v", r, err)
				}
				if !reflect.DeepEqual(q, p) {
					t.Errorf("machine %d: placed from its share differently", r)
				}
				rows := train.Shard(p, r)
				edges := shardEdges(want.Data.Graph, rows)
				g := got.Data.Graph
				if r >= first && (g.NumEdges() != edges || g.NumSamples() != want.Data.Graph.NumSamples() || g.NumParams() != want.Data.Graph.NumParams()) {
					t.Errorf("machine %d read %v, want its %d samples' %d edges of %v", r, g, len(rows), edges, want.Data.Graph)
				}
				if r < first && g.NumEdges() != want.Data.Graph.NumEdges() {
					t.Errorf("machine %d read %v, want the whole graph %v", r, g, want.Data.Graph)
				}
				if (got.Data.TestGraph != nil) != (withTest && r == 0) {
					t.Errorf("machine %d read the test graph: %v, want it only on machine 0 (which scores it)", r, got.Data.TestGraph != nil)
				}
				if w, h := want.App.Part(r, rows, 4, 7), got.App.Part(r, rows, 4, 7); !reflect.DeepEqual(w, h) {
					t.Errorf("machine %d: its part from its share differs from the one from the whole graph", r)
				}
				if got.App.NumSamples() != want.App.NumSamples() || got.App.NumKeys() != want.App.NumKeys() || got.App.Width() != want.App.Width() {
					t.Errorf("machine %d: %d samples, %d keys of width %d; want %d, %d, %d", r, got.App.NumSamples(), got.App.NumKeys(), got.App.Width(),
						want.App.NumSamples(), want.App.NumKeys(), want.App.Width())
				}
			}
		})
	}
}

// randomRatings returns n `row col rating` lines of distinct entries
// over 40 rows and 30 columns, ratings in halves from 0.5 to 5, drawn
// from seed.
func randomRatings(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	seen := map[[2]int]bool{}
	for len(seen) < n {
		e := [2]int{1 + r.IntN(40), 1 + r.IntN(30)}
		if seen[e] {
			continue
		}
		seen[e] = true
		fmt.Fprintf(&b, "%d %d %.1f\n", e[0], e[1], 0.5*float64(1+r.IntN(10)))
	}
	return b.String()
}

// mfJob returns mf on 3 machines on random ratings, with a test file or
// entries held out.
func mfJob(t *testing.T, withTest bool) train.Job {
	job := defaultJob(t, "mf")
	job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "r.tsv", randomRatings(400, 5)), "random", 3
	job.Data.Load.Format = string(graph.FormatRatings)
	if withTest {
		job.Data.Test = writeFile(t, "t.tsv", randomRatings(60, 6)+"41 1 3\n1 31 2\n") // a row and a column training lacks
	}
	return job
}

// TestSharesMF: every machine of mf opened from its share of the data
// cache, with the whole training graph gone from the cache, reads its
// own rows' ratings alone and the test graph (each machine scores its
// rows), takes the whole graph's mean rating from shares.json bit for
// bit, not the share's, and builds bit for bit the part it builds from
// the whole graph (its training, held-out and test entries, factors and
// the mean), with the same count of test entries skipped.
func TestSharesMF(t *testing.T) {
	for _, withTest := range []bool{false, true} {
		t.Run(fmt.Sprintf("test file %v", withTest), func(t *testing.T) {
			job := mfJob(t, withTest)
			want, p, dir := openCached(t, job)
			mean := want.App.(*mf.App).Mean
			b, err := os.ReadFile(filepath.Join(dir, "shares.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sums struct {
				Stats map[string]string `json:"stats"`
			}
			if err := json.Unmarshal(b, &sums); err != nil {
				t.Fatal(err)
			}
			if got, w := sums.Stats["mean"], fmt.Sprintf("%016x", math.Float64bits(mean)); got != w {
				t.Errorf("shares.json records the mean as %q, want %q", got, w)
			}
			dropWholeGraph(t, dir)
			differ := false
			for r := range p.K {
				got, err := openMachine(job, dir, r)
				if err != nil {
					t.Fatalf("machine %d: %v", r, err)
				}
				rows := train.Shard(p, r)
				edges := shardEdges(want.Data.Graph, rows)
				if g := got.Data.Graph; g.NumEdges() != edges || g.NumSamples() != want.Data.Graph.NumSamples() || g.NumParams() != want.Data.Graph.NumParams() {
					t.Errorf("machine %d read %v, want its %d rows' %d ratings of %v", r, g, len(rows), edges, want.Data.Graph)
				}
				if (got.Data.TestGraph != nil) != withTest {
					t.Errorf("machine %d read the test graph: %v, want %v (each machine scores its rows)", r, got.Data.TestGraph != nil, withTest)
				}
				w, h := want.App.(*mf.App), got.App.(*mf.App)
				if math.Float64bits(h.Mean) != math.Float64bits(w.Mean) || h.Skipped != w.Skipped {
					t.Errorf("machine %d: mean %v (bits %x), %d skipped; want %v (%x), %d", r, h.Mean, math.Float64bits(h.Mean), h.Skipped, w.Mean, math.Float64bits(w.Mean), w.Skipped)
				}
				if own, err := mf.New(got.Data.Graph, got.Data.TestGraph, w.Config); err == nil && own.Mean != w.Mean {
					differ = true
				}
				if wp, hp := want.App.Part(r, rows, 4, 7), got.App.Part(r, rows, 4, 7); !reflect.DeepEqual(wp, hp) {
					t.Errorf("machine %d: its part from its share differs from the one from the whole graph", r)
				}
			}
			if withTest && want.App.(*mf.App).Skipped != 2 {
				t.Errorf("%d test entries skipped, want 2", want.App.(*mf.App).Skipped)
			}
			if !differ {
				t.Error("every share's own mean rating is the whole graph's: the test cannot tell them apart")
			}
		})
	}
}

// randomEdges returns n `u v` lines of a SNAP edge list over 60 nodes,
// drawn from seed (repeats and self-loops included: Load drops them).
func randomEdges(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 4))
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "%d\t%d\n", r.IntN(60), r.IntN(60))
	}
	return b.String()
}

// sameSteps trains the parts w and h side by side for two passes of
// their batches, at column values drawn from the keys, and says where
// they first differ: in the keys of a round, or in its loss, samples or
// gradient, bit for bit ("" when nowhere).
func sameSteps(w, h train.Part, width int) string {
	if w.Batches() != h.Batches() {
		return fmt.Sprintf("%d batches, want %d", h.Batches(), w.Batches())
	}
	for r := range 2 * w.Batches() {
		b := r % w.Batches()
		kw, kh := w.Keys(b), h.Keys(b)
		if !reflect.DeepEqual(kw, kh) {
			return fmt.Sprintf("round %d: other keys", r)
		}
		vals := make([]float32, kw.Len()*width)
		for i := range vals {
			vals[i] = float32(math.Sin(float64(i+r))) / 4
		}
		gw, gh := make([]float32, len(vals)), make([]float32, len(vals))
		lw, nw, cw := w.Step(b, slices.Clone(vals), gw, 0.5)
		lh, nh, ch := h.Step(b, slices.Clone(vals), gh, 0.5)
		if math.Float64bits(lw) != math.Float64bits(lh) || nw != nh || cw != ch {
			return fmt.Sprintf("round %d: loss %v, %d samples, %d correct; want %v, %d, %d", r, lh, nh, ch, lw, nw, cw)
		}
		for i := range gw {
			if math.Float32bits(gw[i]) != math.Float32bits(gh[i]) {
				return fmt.Sprintf("round %d: gradient %d is %v, want %v", r, i, gh[i], gw[i])
			}
		}
	}
	return ""
}

// TestSharesEmbed: every machine of embed opened from its share of the
// data cache, with the whole training graph gone from the cache, reads
// its own edges alone and the test graph (the held-out edges, which
// worker 0 ranks), has the initial vectors and held-out edges of the
// whole graph, and trains bit for bit as its part on the whole graph
// does: the same keys, negatives, losses and gradients round after
// round.
func TestSharesEmbed(t *testing.T) {
	for _, withTest := range []bool{false, true} {
		t.Run(fmt.Sprintf("test file %v", withTest), func(t *testing.T) {
			job := defaultJob(t, "embed")
			job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "e.txt", randomEdges(500, 8)), "random", 3
			if withTest {
				job.Data.Test = writeFile(t, "t.txt", randomEdges(30, 9))
			}
			want, p, dir := openCached(t, job)
			dropWholeGraph(t, dir)
			for r := range p.K {
				got, err := openMachine(job, dir, r)
				if err != nil {
					t.Fatalf("machine %d: %v", r, err)
				}
				rows := train.Shard(p, r)
				if g := got.Data.Graph; g.NumEdges() != 2*int64(len(rows)) || g.NumSamples() != want.Data.Graph.NumSamples() || g.NumParams() != want.Data.Graph.NumParams() {
					t.Errorf("machine %d read %v, want its %d edges of %v", r, g, len(rows), want.Data.Graph)
				}
				if (got.Data.TestGraph != nil) != (r == 0) {
					t.Errorf("machine %d read the test graph: %v, want it only on machine 0 (which scores it)", r, got.Data.TestGraph != nil)
				}
				w, h := want.App.(*embed.App), got.App.(*embed.App)
				if r == 0 && !reflect.DeepEqual(h.Held, w.Held) {
					t.Errorf("machine 0: %d held-out edges, want the whole graph's %d", len(h.Held), len(w.Held))
				}
				if !reflect.DeepEqual(h.Init, w.Init) || h.NumKeys() != w.NumKeys() || h.NumSamples() != w.NumSamples() {
					t.Errorf("machine %d: other initial vectors or sizes than from the whole graph", r)
				}
				if msg := sameSteps(want.App.Part(r, rows, 3, 7), got.App.Part(r, rows, 3, 7), w.Width()); msg != "" {
					t.Errorf("machine %d: its part from its share trains otherwise than the one from the whole graph: %s", r, msg)
				}
			}
		})
	}
}

// clicksCSV returns a table of n rows of three categories, a number and
// a click, drawn from seed; rows of day ≥ 20 are a spec's test split.
func clicksCSV(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("day,a,b,c,x,click\n")
	for range n {
		fmt.Fprintf(&b, "%d,a%d,b%d,c%d,%.4f,%d\n", r.IntN(25), r.IntN(6), r.IntN(5), r.IntN(4), r.NormFloat64(), r.IntN(2))
	}
	return b.String()
}

// TestSharesCTR: every machine of ctr opened from its share of the data
// cache, with the whole training graph gone from the cache, reads its
// own rows alone (machine 0 the test rows too, which it scores, or,
// without a test split, the whole graph, whose rows it scores) and
// trains bit for bit as its part on the whole graph does.
func TestSharesCTR(t *testing.T) {
	for _, spec := range []string{"click ~ a + b + hash(c, 3) + std(x) + 1; test: day >= 20", "click ~ a + b + hash(c, 3) + std(x) + 1"} {
		withTest := strings.Contains(spec, "test:")
		t.Run(fmt.Sprintf("test split %v", withTest), func(t *testing.T) {
			job := defaultJob(t, "ctr")
			job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "clicks.csv", clicksCSV(400, 3)), "random", 3
			if err := app.SetOptions(&job, map[string]any{"dim": 4, "hidden": []int{8}}); err != nil {
				t.Fatal(err)
			}
			s, err := features.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			if job.Data.Load.Spec, err = features.Fit(job.Data.Train, s, features.TableOptions(0)); err != nil {
				t.Fatal(err)
			}
			want, p, dir := openCached(t, job)
			first := 0 // machine 0 without a test split reads the whole graph
			if !withTest {
				first = 1
			}
			for r := range p.K {
				if r == 1 {
					dropWholeGraph(t, dir)
				}
				got, err := openMachine(job, dir, r)
				if err != nil {
					t.Fatalf("machine %d: %v", r, err)
				}
				rows := train.Shard(p, r)
				edges := shardEdges(want.Data.Graph, rows)
				if g := got.Data.Graph; r >= first && g.NumEdges() != edges {
					t.Errorf("machine %d read %v, want its %d rows' %d edges", r, g, len(rows), edges)
				}
				if (got.Data.TestGraph != nil) != (withTest && r == 0) {
					t.Errorf("machine %d read the test graph: %v, want it only on machine 0 (which scores it)", r, got.Data.TestGraph != nil)
				}
				if got.App.NumKeys() != want.App.NumKeys() || got.App.NumSamples() != want.App.NumSamples() {
					t.Errorf("machine %d: %d keys, %d samples; want %d, %d", r, got.App.NumKeys(), got.App.NumSamples(), want.App.NumKeys(), want.App.NumSamples())
				}
				if msg := sameSteps(want.App.Part(r, rows, 3, 7), got.App.Part(r, rows, 3, 7), want.App.Width()); msg != "" {
					t.Errorf("machine %d: its part from its share trains otherwise than the one from the whole graph: %s", r, msg)
				}
			}
		})
	}
}

// TestShareStatsDamaged: a statistic missing from shares.json or not a
// float64's bits is an error naming shares.json and the statistic.
func TestShareStatsDamaged(t *testing.T) {
	job := mfJob(t, false)
	want, p, err := app.OpenPlaced(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
	}{
		{"missing", `"mean"`, `"median"`},
		{"not hex", `"mean": "`, `"mean": "x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCache(t, want, p)
			path := filepath.Join(dir, "shares.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.from) {
				t.Fatalf("shares.json has no %s:\n%s", tc.from, b)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(b), tc.from, tc.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = openMachine(job, dir, 1)
			if err == nil {
				t.Fatal("opened")
			}
			for _, w := range []string{"shares.json", `"mean"`, "data.cache"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// openMachine opens job as machine r does from the data cache dir (a
// replacement's way: its share when the cache holds shares).
func openMachine(job train.Job, dir string, r int) (*app.Opened, error) {
	job.Data.Cache, job.Data.Share = dir, &r
	return app.Open(job)
}

// TestShareDamaged: a share file missing, cut short, changed in place
// (same size) or not a graph is an error naming the file and what is
// wrong, never a wrong share; a cache written without shares gives the
// whole graph.
func TestShareDamaged(t *testing.T) {
	job := defaultJob(t, "lr")
	job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "train.svm", randomSVM(100, 3)), "random", 2
	job.Data.Test = writeFile(t, "test.svm", randomSVM(20, 4))
	want, p, err := app.OpenPlaced(job)
	if err != nil {
		t.Fatal(err)
	}
	share := func(dir string) string { return filepath.Join(dir, "share-1.graph") }
	for _, tc := range []struct {
		name   string
		damage func(dir string) error
		want   []string
	}{
		{"missing", func(dir string) error { return os.Remove(share(dir)) }, []string{"share-1.graph", "no such file"}},
		{"cut short", func(dir string) error {
			st, err := os.Stat(share(dir))
			if err != nil {
				return err
			}
			return os.Truncate(share(dir), st.Size()-4)
		}, []string{"share-1.graph", "bytes, but", "shares.json records"}},
		{"a bit flipped", func(dir string) error {
			b, err := os.ReadFile(share(dir))
			if err != nil {
				return err
			}
			g := want.Data.Graph // the first label's lowest bit: still a valid graph
			b[len(b)-8*g.NumParams()-8*g.NumSamples()] ^= 1
			return os.WriteFile(share(dir), b, 0o644)
		}, []string{"share-1.graph", "CRC-32C", "changed since it was written"}},
		{"not a graph", func(dir string) error {
			b, err := os.ReadFile(share(dir))
			if err != nil {
				return err
			}
			b[0] = 'X'
			return os.WriteFile(share(dir), b, 0o644)
		}, []string{"share-1.graph", "not a graph"}},
		{"shares.json not JSON", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "shares.json"), []byte("{"), 0o644)
		}, []string{"shares.json"}},
		{"shares.json a FIFO", func(dir string) error {
			p := filepath.Join(dir, "shares.json")
			if err := os.Remove(p); err != nil {
				return err
			}
			return syscall.Mkfifo(p, 0o644)
		}, []string{"shares.json", "not a regular file"}},
		{"shares.json too large", func(dir string) error {
			return os.Truncate(filepath.Join(dir, "shares.json"), 16<<20+1)
		}, []string{"shares.json", "more than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCache(t, want, p)
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := openMachine(job, dir, 1)
			if err == nil {
				t.Fatal("opened")
			}
			for _, w := range append(tc.want, "data.cache") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("no shares", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if ok, err := want.Data.WriteCache(dir); !ok || err != nil {
			t.Fatalf("write the cache: %v, %v", ok, err)
		}
		got, err := openMachine(job, dir, 1)
		if err != nil || !reflect.DeepEqual(got.Data, want.Data) {
			t.Errorf("a cache without shares: %v, want the whole data", err)
		}
	})
}

// BenchmarkOpenShare20News opens lr on 20 Newsgroups (training and test
// sets) from a data cache as a replacement of machine 1 of 4 does:
// "whole" reads the whole training graph (as before shares), "share"
// machine 1's share alone; it reports the training data's bytes read.
// "write-graphs" and "write-with-shares" are what the parent spends
// writing the cache without and with the 4 shares.
func BenchmarkOpenShare20News(b *testing.B) {
	dir := filepath.Join("..", "..", "shared", "data", "20news-bydate")
	src, test := filepath.Join(dir, "20news-bydate.train.libsvm.xz"), filepath.Join(dir, "20news-bydate.test.libsvm.xz")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("20 Newsgroups is not in ../shared/data: %v", err)
	}
	job := defaultJob(b, "lr")
	job.Data.Train, job.Data.Test, job.Placement, job.Config.Machines = src, test, "random", 4
	benchOpenShare(b, job)
}

// BenchmarkOpenShareMovieLens is BenchmarkOpenShare20News for mf on
// MovieLens 100k (u.data, 10% of the ratings held out), machine 1 of 4:
// its share and the whole graph's mean rating from shares.json.
func BenchmarkOpenShareMovieLens(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "data", "movielens-100k", "u.data.xz")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("MovieLens 100k is not in ../shared/data: %v", err)
	}
	job := defaultJob(b, "mf")
	job.Data.Train, job.Placement, job.Config.Machines = src, "random", 4
	job.Data.Load.Format = string(graph.FormatRatings)
	benchOpenShare(b, job)
}

// benchOpenShare runs the sub-benchmarks of BenchmarkOpenShare20News on
// job.
func benchOpenShare(b *testing.B, job train.Job) {
	opened, p, err := app.OpenPlaced(job)
	if err != nil {
		b.Fatal(err)
	}
	cache := filepath.Join(b.TempDir(), "data")
	if ok, err := opened.WriteCache(cache, p); !ok || err != nil {
		b.Fatalf("write the cache: %v, %v", ok, err)
	}
	size := func(name string) float64 {
		st, err := os.Stat(filepath.Join(cache, name))
		if err != nil {
			b.Fatal(err)
		}
		return float64(st.Size())
	}
	// What the parent spends writing the cache, without and with the
	// shares.
	for _, c := range []struct {
		name  string
		write func(string) (bool, error)
	}{{"write-graphs", opened.Data.WriteCache}, {"write-with-shares", func(dir string) (bool, error) { return opened.WriteCache(dir, p) }}} {
		b.Run(c.name, func(b *testing.B) {
			tmp := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				if ok, err := c.write(filepath.Join(tmp, strconv.Itoa(i))); !ok || err != nil {
					b.Fatalf("write the cache: %v, %v", ok, err)
				}
			}
		})
	}
	one := 1
	for _, c := range []struct {
		name  string
		share *int
		file  string
	}{{"whole", nil, "train.graph"}, {"share", &one, "share-1.graph"}} {
		b.Run(c.name, func(b *testing.B) {
			j := job
			j.Data.Cache, j.Data.Share = cache, c.share
			for b.Loop() {
				if _, err := app.Open(j); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(size(c.file), "train-bytes/op")
		})
	}
}
