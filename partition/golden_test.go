package partition

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
	"testing"

	"colo/placement"
)

// placementGolden are the SHA-256 sums (placementSum) of the placements
// of 20 Newsgroups at k = 8, seed 1, that colo partition writes with its
// defaults (--algo A, with --directions where marked; the data.part and
// param.part files of random, parsa, tsh and best have had the same MD5s
// since before rmax was added): a partitioner whose placement changes
// must say so here.
var placementGolden = []struct {
	algo       string
	directions bool
	sum        string
}{
	{"random", false, "955af5698cebaebf3defac6e8c78ecab766e24e6c4707b0f332dc09fe9d0147d"},
	{"parsa", false, "fcba80f78217dae704632aaa7918cf12b00b8061c03b9f8b075bb8dee2295eaa"},
	{"tsh", false, "0d1713fbcb4fa2b7513f522c54e7f89dccec70d14cf36e2231414d9d13a0af68"},
	{"best", false, "48e3dbf476b0c4aa8df768abb45b8f4edb9b2cea159b6e2c4c1f991017cdfa5f"},
	{"best", true, "2f428ae48159a2802b64c4b212ca1db7e4c8aba77f4889f3b476dba9ffc669f5"},
	// rmax is the candidate of the R_max objective: its sum changes
	// when RefineRound is meant to, and is then recorded again.
	{"rmax", true, "9db6c80a291c40dcf4972f42de00da658a8641c2635c9f48b8714a6d9fc8d772"},
}

// placementSum is the SHA-256 of k, then every sample's machine and
// every parameter's server, as little-endian int32s.
func placementSum(p *placement.Placement) string {
	h := sha256.New()
	b := binary.LittleEndian.AppendUint32(nil, uint32(p.K))
	for _, x := range p.Data {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	for _, x := range p.Param {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// TestPlacementsGolden: the placements of the partitioners that are not
// meant to change keep their bytes (on amd64, where the floating-point
// arithmetic is that of the build that recorded them: no fused
// multiply-adds).
func TestPlacementsGolden(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("golden placements recorded on amd64, not %s", runtime.GOARCH)
	}
	g := news20.load(t)
	for _, c := range placementGolden {
		f, err := Lookup(c.algo)
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{K: 8, Seed: 1, Parsa: DefaultParsaOptions(), Directions: c.directions}
		opt.TSH.Alpha = 1
		p, err := f(g, opt)
		if err != nil {
			t.Fatalf("%s: %v", c.algo, err)
		}
		if got := placementSum(p); got != c.sum {
			t.Errorf("%s (directions %v): placement SHA-256 %s, recorded %s", c.algo, c.directions, got, c.sum)
		}
	}
}
