package distparsa

import (
	"fmt"
	"io"

	"colo/internal/textio"
	"colo/partition/ooc"
)

// ReadWords says how the machines of a run of RunNode read the data
// file: each its own range of lines, or each the whole file (a compressed
// one has no ranges by byte offsets).
func (r *Report) ReadWords() string {
	read := "each machine parsed its own range of the file's lines"
	if len(r.PerWorker) > 0 && r.PerWorker[0].File != nil && r.PerWorker[0].File.Read != "range" {
		read = "each machine parsed the whole file"
		if r.PerWorker[0].File.Compressed {
			read += " (compressed: no ranges by byte offsets)"
		}
	}
	return read
}

// WriteMachines writes a line to w for each machine that read the data
// file: its blocks and samples, what it parsed, its reading time, its
// spill and its peak resident memory beside its cap.
func (rep *Report) WriteMachines(w io.Writer) {
	commas := func(n int64) string { return textio.Commas(n) }
	for _, r := range rep.PerWorker {
		if r.File != nil {
			what := "the whole file"
			if len(r.File.Range) == 2 {
				what = fmt.Sprintf("bytes %s..%s", commas(r.File.Range[0]), commas(r.File.Range[1]))
			}
			peak := ooc.FormatBytes(r.PeakRSS)
			if r.File.MemoryCap > 0 {
				peak += fmt.Sprintf(" of a %s cap (estimated need %s)", ooc.FormatBytes(r.File.MemoryCap), ooc.FormatBytes(r.File.Needed))
			}
			fmt.Fprintf(w, "  machine %d: %d blocks, %s samples; parsed %s, read %.2f s, spilled %s, peak resident %s\n", r.Rank, r.Blocks,
				commas(int64(r.Samples)), what, r.File.Seconds["read"]+r.File.Seconds["exchange"]+r.File.Seconds["rows"]+r.File.Seconds["blocks"],
				ooc.FormatBytes(r.File.SpillBytes), peak)
		}
	}
}
