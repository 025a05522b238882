package graph

import (
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

// refHash is hashFeature written with hash/fnv, as an independent check.
func refHash(col int, tok string) uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(col)})
	h.Write([]byte(tok))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func TestAppendBucket(t *testing.T) {
	// Expected buckets computed by hand: floor(ln(v)²).
	tests := []struct {
		v    int64
		want string
	}{
		{-9223372036854775808, "SP-9223372036854775808"},
		{-3, "SP-3"}, {-1, "SP-1"}, {0, "SP0"}, {1, "SP1"}, {2, "SP2"},
		{3, "1"},    // ln(3)² = 1.21
		{7, "3"},    // 3.79
		{8, "4"},    // 4.32
		{100, "21"}, // 21.21
		{1000000, "190"},
		{9223372036854775807, "1906"}, // 1906.92
	}
	for _, tt := range tests {
		if got := string(appendBucket(nil, tt.v)); got != tt.want {
			t.Errorf("bucket(%d) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestHashFeature(t *testing.T) {
	for col := range 40 {
		for _, tok := range []string{"", "SP0", "1", "68fd1e64", "80e26c9b"} {
			if got, want := hashFeature(col, []byte(tok)), refHash(col, tok); got != want {
				t.Errorf("hash(%d, %q) = %x, want %x", col, tok, got, want)
			}
		}
	}
	// Pinned so that parameter ids never change between versions.
	for _, tt := range []struct {
		col  int
		tok  string
		want uint64
	}{{14, "68fd1e64", 0x3193340bfd715472}, {1, "SP0", 0x17d1722575a74c01}} {
		if got := hashFeature(tt.col, []byte(tt.tok)); got != tt.want {
			t.Errorf("hash(%d, %q) = %#x, want %#x", tt.col, tt.tok, got, tt.want)
		}
	}
}

// criteoLine joins a label and feature fields with tabs.
func criteoLine(fields ...string) string { return strings.Join(fields, "\t") }

func TestReadCriteo(t *testing.T) {
	full := []string{"1", "1", "5", "", "-2", "100"}
	for range 8 {
		full = append(full, "")
	}
	full = append(full, "68fd1e64", "", "80e26c9b")
	in := criteoLine(full...) + "\r\n" + "\n" + criteoLine("0") + "\n" + criteoLine("0", "", "", "3") + "\n"
	opt := DefaultLoadOptions()
	g, err := ReadCriteo(strings.NewReader(in), "c.tsv", opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	mask := uint64(1)<<DefaultHashBits - 1
	want := [][]uint64{
		{refHash(1, "SP1") & mask, refHash(2, "2") & mask, refHash(4, "SP-2") & mask, refHash(5, "21") & mask,
			refHash(14, "68fd1e64") & mask, refHash(16, "80e26c9b") & mask},
		{},
		{refHash(3, "1") & mask},
	}
	for _, row := range want {
		slices.Sort(row)
	}
	got := viewOf(g)
	if len(got.rows) != len(want) {
		t.Fatalf("got %d samples, want %d", len(got.rows), len(want))
	}
	for u := range want {
		if !slices.Equal(got.rows[u], want[u]) {
			t.Errorf("sample %d: got %v, want %v", u, got.rows[u], want[u])
		}
	}
	if !slices.Equal(g.Labels(), []float64{1, 0, 0}) || g.HasValues() {
		t.Errorf("labels %v, values %v", g.Labels(), g.HasValues())
	}
	if m := g.Meta(); m.Format != "criteo" || m.Source != "c.tsv" {
		t.Errorf("meta %+v", m)
	}
}

// TestReadCriteoCollisions hashes into 2 buckets: features that collide
// give one edge whose value is their count.
func TestReadCriteoCollisions(t *testing.T) {
	fields := []string{"1"}
	for i := range 39 {
		if i < 13 {
			fields = append(fields, "7")
		} else {
			fields = append(fields, "a1b2c3d4")
		}
	}
	opt := DefaultLoadOptions()
	opt.HashBits = 1
	g, err := ReadCriteo(strings.NewReader(criteoLine(fields...)+"\n"), "c.tsv", opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	counts := [2]float32{}
	for col := 1; col <= 39; col++ {
		tok := "3"
		if col > 13 {
			tok = "a1b2c3d4"
		}
		counts[refHash(col, tok)&1]++
	}
	var want []float32
	for _, c := range counts {
		if c > 0 {
			want = append(want, c)
		}
	}
	if vals := g.Values(0); !slices.Equal(vals, want) {
		t.Errorf("values %v, want %v", vals, want)
	}
}

func TestReadCriteoErrors(t *testing.T) {
	many := make([]string, 41)
	for i := range many {
		many[i] = "1"
	}
	tests := []struct {
		name  string
		in    string
		line  int
		field int
		want  string
	}{
		{"non-integer", criteoLine("1", "3", "4.5") + "\n", 1, 3, `"4.5": want an integer (feature I2)`},
		{"word in integer column", "0\t1\n" + criteoLine("0", "", "", "", "", "", "", "", "", "", "", "", "", "x") + "\n", 2, 14, `"x": want an integer (feature I13)`},
		{"integer overflow", criteoLine("0", "9223372036854775808") + "\n", 1, 2, "want an integer"},
		{"41 fields", criteoLine(many...) + "\n", 1, 41, "41 fields: want at most 40"},
		{"label 2", criteoLine("2", "1") + "\n", 1, 1, `"2": want label 0 or 1`},
		{"empty label", criteoLine("", "1") + "\n", 1, 1, `"": want label 0 or 1`},
		{"label 01", "01\n", 1, 1, `"01": want label 0 or 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCriteo(strings.NewReader(tt.in), "c.tsv", DefaultLoadOptions())
			checkParseError(t, err, "c.tsv", tt.line, tt.field, tt.want)
		})
	}
}

func TestReadCriteoEmpty(t *testing.T) {
	_, err := ReadCriteo(strings.NewReader("\n\n"), "c.tsv", DefaultLoadOptions())
	if err == nil || err.Error() != "c.tsv: empty: no samples" {
		t.Errorf("err = %v", err)
	}
	opt := DefaultLoadOptions()
	opt.HashBits = 33
	if _, err := ReadCriteo(strings.NewReader("1\n"), "c.tsv", opt); err == nil || !strings.Contains(err.Error(), "hash bits 33") {
		t.Errorf("err = %v", err)
	}
}

func TestLoadCriteoSample(t *testing.T) {
	p := dataFile(t, "criteo-kaggle-sample-1k/criteo_train_first1000.txt.xz")
	g, err := Load(p, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 1000 || g.Meta().Format != "criteo" {
		t.Fatalf("got %v, meta %+v", g, g.Meta())
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	ones := 0
	for u := range g.NumSamples() {
		if d := g.SampleDegree(u); d > 39 || d == 0 {
			t.Errorf("sample %d: %d edges", u, d)
		}
		switch g.Label(u) {
		case 1:
			ones++
		case 0:
		default:
			t.Errorf("sample %d: label %v", u, g.Label(u))
		}
	}
	if ones == 0 || ones == 1000 {
		t.Errorf("%d positive labels", ones)
	}
}

// TestBuilderDupSumWithoutValues covers a row without values in which ids
// repeat more than once: each repeat adds 1.
func TestBuilderDupSumWithoutValues(t *testing.T) {
	b := NewBuilder(Meta{})
	b.SetDupPolicy(DupSum)
	if err := b.AddSample(1, []uint64{5, 2, 5, 2, 5, 9}, nil); err != nil {
		t.Fatal(err)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	got := viewOf(g)
	if !slices.Equal(got.rows[0], []uint64{2, 5, 9}) || !slices.Equal(got.vals[0], []float32{2, 3, 1}) {
		t.Errorf("got %v %v, want [2 5 9] [2 3 1]", got.rows[0], got.vals[0])
	}
}
