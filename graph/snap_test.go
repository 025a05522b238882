package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// snapView is a graph read from an edge list: node ids of the samples and
// the target node ids of each.
type snapView struct {
	nodes []uint64
	rows  [][]uint64
}

func snapViewOf(g *Graph) snapView {
	var s snapView
	for u := range g.NumSamples() {
		s.nodes = append(s.nodes, g.SampleID(u))
	}
	s.rows = viewOf(g).rows
	return s
}

func TestReadSNAP(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		undirected bool
		drop       bool
		want       snapView
	}{
		{
			name: "header and tabs",
			in:   "# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n0\t2\n2\t1\n",
			want: snapView{nodes: []uint64{0, 1, 2}, rows: [][]uint64{{1, 2}, {}, {1}}},
		},
		{
			name: "spaces, CRLF, blank lines, unsorted",
			in:   "5 3\r\n\r\n  1   5  \r\n5 1\r\n% comment\n",
			want: snapView{nodes: []uint64{1, 3, 5}, rows: [][]uint64{{5}, {}, {1, 3}}},
		},
		{
			name:       "undirected",
			in:         "1 2\n2 3\n",
			undirected: true,
			want:       snapView{nodes: []uint64{1, 2, 3}, rows: [][]uint64{{2}, {1, 3}, {2}}},
		},
		{
			name:       "undirected with both directions listed",
			in:         "1 2\n2 1\n1 2\n",
			undirected: true,
			want:       snapView{nodes: []uint64{1, 2}, rows: [][]uint64{{2}, {1}}},
		},
		{
			name: "duplicate edges",
			in:   "1 2\n1 2\n",
			want: snapView{nodes: []uint64{1, 2}, rows: [][]uint64{{2}, {}}},
		},
		{
			name: "self-loops kept",
			in:   "0 0\n0 1\n",
			want: snapView{nodes: []uint64{0, 1}, rows: [][]uint64{{0, 1}, {}}},
		},
		{
			name:       "self-loop undirected once",
			in:         "3 3\n",
			undirected: true,
			want:       snapView{nodes: []uint64{3}, rows: [][]uint64{{3}}},
		},
		{
			name: "self-loops dropped, node kept",
			in:   "0 0\n0 1\n7 7\n",
			drop: true,
			want: snapView{nodes: []uint64{0, 1, 7}, rows: [][]uint64{{1}, {}, {}}},
		},
		{
			name: "a dropped self-loop's node beyond 32 bits",
			in:   "4294967296 4294967296\n2147483648 1\n",
			drop: true,
			want: snapView{nodes: []uint64{1, 1 << 31, 1 << 32}, rows: [][]uint64{{}, {1}, {}}},
		},
		{
			name: "ids beyond 32 bits",
			in:   "4294967296 1\n1 18446744073709551615\n3 2\n",
			want: snapView{
				nodes: []uint64{1, 2, 3, 1 << 32, 1<<64 - 1},
				rows:  [][]uint64{{1<<64 - 1}, {}, {2}, {1}, {}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := DefaultLoadOptions()
			opt.DropSelfLoops = tt.drop
			g, err := ReadSNAP(strings.NewReader(tt.in), "g.txt", tt.undirected, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := snapViewOf(g); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			format := "snap"
			if tt.undirected {
				format = "snap-undirected"
			}
			if m := g.Meta(); m.Format != format || m.Source != "g.txt" || g.Labels() != nil || g.HasValues() {
				t.Errorf("meta %+v, labels %v, values %v", m, g.Labels(), g.HasValues())
			}
		})
	}
}

func TestReadSNAPErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		line  int
		field int
		want  string
	}{
		{"one field", "# c\n1 2\n3\n", 3, 0, `"3": want two node ids "u v", got 1 fields`},
		{"three fields", "1 2 3\n", 1, 0, `"1 2 3": want two node ids "u v", got 3 fields`},
		{"negative source", "-1 2\n", 1, 1, `"-1": want a non-negative integer node id`},
		{"negative target", "1 -2\n", 1, 2, `"-2": want a non-negative integer node id`},
		{"non-integer", "1 2.5\n", 1, 2, `"2.5": want a non-negative integer node id`},
		{"word", "a b\n", 1, 1, `"a": want a non-negative integer node id`},
		{"too large", "18446744073709551616 1\n", 1, 1, "want a non-negative integer node id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSNAP(strings.NewReader(tt.in), "g.txt", false, DefaultLoadOptions())
			checkParseError(t, err, "g.txt", tt.line, tt.field, tt.want)
		})
	}
}

func TestReadSNAPEmpty(t *testing.T) {
	for _, in := range []string{"", "# Nodes: 0 Edges: 0\n", "\n\n"} {
		_, err := ReadSNAP(strings.NewReader(in), "e.txt", true, DefaultLoadOptions())
		if err == nil || err.Error() != "e.txt: empty: no samples" {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

// TestReadSNAPReference compares random edge lists against a map-based
// reading.
func TestReadSNAPReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 50 {
		undirected, drop := trial%2 == 1, trial%3 == 0
		var b strings.Builder
		adj := map[uint64]map[uint64]bool{}
		node := func(id uint64) {
			if adj[id] == nil {
				adj[id] = map[uint64]bool{}
			}
		}
		span := uint64(1 + rng.IntN(1000))
		if trial%5 == 4 {
			span = 1 << 40
		}
		for range rng.IntN(3000) {
			u, v := rng.Uint64N(span), rng.Uint64N(span)
			if rng.IntN(10) == 0 {
				v = u
			}
			fmt.Fprintf(&b, "%d\t%d\n", u, v)
			node(u)
			node(v)
			if u == v && drop {
				continue
			}
			adj[u][v] = true
			if undirected {
				adj[v][u] = true
			}
		}
		opt := DefaultLoadOptions()
		opt.DropSelfLoops = drop
		g, err := ReadSNAP(strings.NewReader(b.String()), "r.txt", undirected, opt)
		if len(adj) == 0 {
			if err == nil {
				t.Errorf("trial %d: empty input read", trial)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		var want snapView
		for id := range adj {
			want.nodes = append(want.nodes, id)
		}
		slices.Sort(want.nodes)
		for _, id := range want.nodes {
			row := []uint64{}
			for v := range adj[id] {
				row = append(row, v)
			}
			slices.Sort(row)
			want.rows = append(want.rows, row)
		}
		if got := snapViewOf(g); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d (undirected %v, drop %v): graphs differ", trial, undirected, drop)
		}
	}
}

// TestRadixSort checks the radix sort against slices.Sort.
func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 10, 1000, 100000} {
		for _, mask := range []uint64{0, 0xff, 0xffff0000, 1<<40 - 1, ^uint64(0)} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = rng.Uint64() & mask
			}
			want := slices.Clone(a)
			slices.Sort(want)
			radixSort(a, make([]uint64, n))
			if !slices.Equal(a, want) {
				t.Fatalf("n %d, mask %x: not sorted", n, mask)
			}
		}
	}
}

func TestLoadSlashdot(t *testing.T) {
	p := dataFile(t, "soc-Slashdot0902/soc-Slashdot0902.txt.gz")
	g, err := Load(p, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 82168 || g.NumEdges() != 948464 {
		t.Errorf("got %v, want 82168 samples and 948464 edges", g)
	}
	if g.Meta().Format != "snap" {
		t.Errorf("meta %+v", g.Meta())
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFacebookUndirected(t *testing.T) {
	p := dataFile(t, "ego-Facebook/facebook_combined.txt.gz")
	opt := DefaultLoadOptions()
	opt.Format = FormatSNAPUndirected
	g, err := Load(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 4039 || g.NumParams() != 4039 || g.NumEdges() != 2*88234 {
		t.Errorf("got %v, want 4039 samples and parameters, 176468 edges", g)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	// Undirected: the graph is its own transpose.
	if !slices.Equal(g.SampleOffsets(), g.ParamOffsets()) || !slices.Equal(g.SampleAdjacency(), g.ParamAdjacency()) {
		t.Error("undirected graph is not symmetric")
	}
}

// TestReadSNAPWideAfterChunks switches to 64-bit edges after more edges
// than several storage chunks hold: every edge read before the switch is
// kept, in order.
func TestReadSNAPWideAfterChunks(t *testing.T) {
	var in strings.Builder
	const n = 3*minChunk + 7
	for i := range n {
		fmt.Fprintf(&in, "%d %d\n", i%97, i)
	}
	in.WriteString("4294967296 5\n")
	g, err := ReadSNAP(strings.NewReader(in.String()), "g.txt", false, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumEdges() != n+1 {
		t.Fatalf("%d edges, want %d", g.NumEdges(), n+1)
	}
	view := snapViewOf(g)
	for s, node := range view.nodes {
		if node >= 97 && node != 1<<32 {
			if len(view.rows[s]) != 0 {
				t.Fatalf("node %d has out-edges %v", node, view.rows[s])
			}
			continue
		}
		var want []uint64
		switch node {
		case 1 << 32:
			want = []uint64{5}
		default:
			for v := node; v < n; v += 97 {
				want = append(want, v)
			}
		}
		if fmt.Sprint(view.rows[s]) != fmt.Sprint(want) {
			t.Fatalf("node %d: out-edges %v, want %v", node, view.rows[s], want)
		}
	}
}

// TestSnapPair checks the one-pass reading of an edge list's line against
// the token-by-token one on random lines near its limits (ids of up to 22
// digits, separators of spaces and tabs, a third field, stray characters):
// whenever snapPair reads a line, splitSpace finds two fields and
// parseUint gives the same ids; and the lines it leaves are ones the
// slow path reads too, or refuses.
func TestSnapPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 35))
	field := func() string {
		b := make([]byte, 1+rng.IntN(22))
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		if rng.IntN(20) == 0 {
			b[rng.IntN(len(b))] = "x-+."[rng.IntN(4)]
		}
		return string(b)
	}
	fast := 0
	for trial := range 20000 {
		line := field()
		for range 1 + rng.IntN(2) {
			line += []string{" ", "\t", "  ", " \t"}[rng.IntN(4)] + field()
		}
		if rng.IntN(10) == 0 {
			line = field()
		}
		tt := trimSpace([]byte(line))
		u, v, ok := snapPair(tt)
		var tok [3][]byte
		n := splitSpace(tt, tok[:])
		if !ok {
			continue
		}
		fast++
		if n != 2 {
			t.Fatalf("trial %d: %q read as %d %d, but it has %d fields", trial, line, u, v, n)
		}
		x, okx := parseUint(tok[0])
		y, oky := parseUint(tok[1])
		if !okx || !oky || x != u || y != v {
			t.Fatalf("trial %d: %q read as %d %d, token by token %d (%v) %d (%v)", trial, line, u, v, x, okx, y, oky)
		}
	}
	if fast < 5000 {
		t.Fatalf("only %d of the lines took the one-pass reading", fast)
	}
}
