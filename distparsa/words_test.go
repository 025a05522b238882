package distparsa

import (
	"strings"
	"testing"

	"colo/partition/ooc"
)

func TestReportWords(t *testing.T) {
	r := &Report{PerWorker: []Result{
		{Rank: 0, Blocks: 4, Samples: 1200, PeakRSS: 1 << 20, File: &ooc.OutOfCoreStats{Read: "range", Range: []int64{0, 5000},
			Seconds: map[string]float64{"read": 1, "rows": 0.5}, SpillBytes: 2048}},
		{Rank: 1, Blocks: 3, Samples: 900},
	}}
	if got, want := r.ReadWords(), "each machine parsed its own range of the file's lines"; got != want {
		t.Errorf("ReadWords() = %q, want %q", got, want)
	}
	var b strings.Builder
	r.WriteMachines(&b)
	want := "  machine 0: 4 blocks, 1,200 samples; parsed bytes 0..5,000, read 1.50 s, spilled " + ooc.FormatBytes(2048) +
		", peak resident " + ooc.FormatBytes(1<<20) + "\n"
	if b.String() != want {
		t.Errorf("WriteMachines wrote %q, want %q (machine 1 read no file)", b.String(), want)
	}
	r.PerWorker[0].File.Read, r.PerWorker[0].File.Compressed = "whole", true
	if got, want := r.ReadWords(), "each machine parsed the whole file (compressed: no ranges by byte offsets)"; got != want {
		t.Errorf("ReadWords() = %q, want %q", got, want)
	}
	if got := (&Report{}).ReadWords(); got != "each machine parsed its own range of the file's lines" {
		t.Errorf("empty report: ReadWords() = %q", got)
	}
}
