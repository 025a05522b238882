package ooc

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"

	"colo/internal/membudget"
	"colo/partition"
)

// The memory of an out-of-core run: what it needs (plan), the error when
// a cap is below that, and what it used (peakRSS, heapBytes).

// oocBuffers is what a run needs for its read and write buffers besides
// the block files' (a decompressor's window is counted apart: see
// docs/parsa.md) and for code first run during the run. oocSlack is the garbage collector's room above the live
// arrays, as a fraction of them, under the run's memory limit.
const (
	oocBuffers = 8 << 20
	oocSlack   = 0.25
)

// oocMargin is the room the run leaves, below its cap, to memory that the
// Go runtime's limit does not see (code first run during the run) and to
// the runtime's overshoot of its soft limit.
const oocMargin = 8 << 20

// memNeed is the memory a run needs by part. Phases run one after the
// other: the total is the index and the overhead plus the largest phase.
type memNeed struct {
	parts map[string]int64
}

// The phases whose arrays are not alive together.
var oocPhases = []string{"rows", "shuffle", "partition", "params"}

func (n memNeed) total() int64 {
	var top int64
	for _, p := range oocPhases {
		top = max(top, n.parts[p])
	}
	arrays := n.parts["index"] + top
	return n.parts["process"] + oocBuffers + arrays + int64(oocSlack*float64(arrays))
}

// blockBytes bounds the memory of Alg. 3 on a block of nb samples and e
// edges over at most mb distinct parameters: the block as read (12 bytes
// per sample, 4 per edge), its subgraph both ways (16 per sample, 8 per
// edge, 36 + 16·w per parameter with the masks and their copies pushed),
// and the bucket queues (12·k per sample, 4·k per cost).
func blockBytes(nb, e, mb int64, k, w, maxDeg int) int64 {
	return 29*nb + 12*e + mb*(36+16*int64(w)) + 12*int64(k)*nb + 4*int64(k)*int64(maxDeg+1)
}

// need returns what a run over b blocks needs.
func (r *oocRun) need(b int) memNeed {
	n, m, e := int64(r.n), int64(r.m), r.st.Edges
	w := int64(r.w)
	var idx int64
	if r.params != nil {
		idx += r.params.bytes()
	}
	if r.nodes != nil {
		idx += r.nodes.bytes()
	}
	shuffle := 4*n + int64(b)*(blockBuf+200)
	// A block: its share of the samples and edges, with room for the
	// deviation of a random cut and the largest sample.
	nb := (n+int64(b)-1)/int64(b) + 1
	eb := int64(math.Ceil(1.1*float64(e)/float64(b))) + int64(r.maxDeg)
	if r.po.Init == partition.InitGlobal {
		shuffle += 4*n + n/8
		ng := int64(partition.GlobalSize(r.po, r.n, e))
		nb = max(nb, ng+1)
		eb = max(eb, int64(math.Ceil(1.1*float64(ng)/float64(max(1, n))*float64(e)))+int64(r.maxDeg))
	}
	nb, eb = min(nb, n), min(eb, e)
	block := blockBytes(nb, eb, min(eb, m), r.k, r.w, r.maxDeg)
	return memNeed{parts: map[string]int64{
		"index":     idx,
		"process":   r.baseRSS,
		"rows":      r.rowsBytes,
		"shuffle":   shuffle,
		"sets":      16*w*m + 12*m,
		"block":     block,
		"partition": 16*w*m + 12*m + block,
		"params":    8*w*m + 16*m,
	}}
}

// plan returns the number of blocks and what the run needs: Blocks, or
// Parsa's default number, made larger (smaller blocks) while that is what
// keeps the run under the cap.
func (r *oocRun) plan() (int, memNeed) {
	clip := func(b int) int { return max(1, min(b, r.n)) }
	if r.po.Blocks > 0 {
		b := clip(r.po.Blocks)
		return b, r.need(b)
	}
	b := clip(max(partition.MinBlocks, int((r.st.Edges+partition.DefaultBlockEdges-1)/partition.DefaultBlockEdges)))
	best := r.need(b)
	for r.oc.Memory > 0 && best.total() > r.oc.Memory && b < r.n {
		nb := clip(2 * b)
		nd := r.need(nb)
		if nd.total() >= best.total() {
			break
		}
		b, best = nb, nd
	}
	return b, best
}

// MemoryError is the error of an out-of-core run whose memory cap is below
// what it needs.
type MemoryError struct {
	Cap, Need       int64
	Parts           map[string]int64
	Samples, Params int
	Edges           int64
	// Blocks is the number of blocks planned, for a machine of a
	// distributed run (Machine); 0 otherwise. FixedBlocks says the
	// number was the caller's (partition.Options.Parsa.Blocks), not the plan's.
	Blocks      int
	FixedBlocks bool
}

func (e *MemoryError) Error() string {
	f := FormatBytes
	if _, machine := e.Parts["server"]; machine {
		block := fmt.Sprintf("a block %s", f(e.Parts["block"]))
		if !e.FixedBlocks {
			block += " (more blocks make it smaller)"
		}
		phases := []string{block}
		if g := e.Parts["global"]; g > 0 {
			phases = append(phases, fmt.Sprintf("the global initialisation's block %s (a smaller --init-fraction makes it smaller)", f(g)))
		}
		phases = append(phases, fmt.Sprintf("machine 0's gathering of the placement %s", f(e.Parts["end"])),
			fmt.Sprintf("the parameter assignment %s", f(e.Parts["params"])),
			fmt.Sprintf("machine 0's evaluation of the placement %s (without the masks and the partitions)", f(e.Parts["evaluate"])))
		return fmt.Sprintf("memory cap %s is below the %s a machine of this run needs with %d blocks (%d samples, %d parameters, %d edges): "+
			"the process before the run %s, the id index %s, its server's share of the keys %s, the masks of its samples' parameters %s, "+
			"its samples' partitions %s, and the largest of: %s; "+
			"plus %s of buffers, %.0f%% of the arrays for the garbage collector and %s of room below the cap for the runtime's soft limit",
			f(e.Cap), f(e.Need), e.Blocks, e.Samples, e.Params, e.Edges, f(e.Parts["process"]), f(e.Parts["index"]), f(e.Parts["server"]),
			f(e.Parts["masks"]), f(e.Parts["own"]), strings.Join(phases, ", "),
			f(oocBuffers), 100*oocSlack, f(e.Parts["margin"]))
	}

	_, planned := e.Parts["sets"]
	rows, sorting := e.Parts["rows"]
	switch {
	case !planned && sorting:
		return fmt.Sprintf("memory cap %s is below the %s this run needs (%d samples, %d parameters, %d edges): "+
			"the process before the run %s, the id index %s, sorting the edges of a range of SNAP sources %s; "+
			"plus %s of buffers and %.0f%% of the arrays for the garbage collector",
			f(e.Cap), f(e.Need), e.Samples, e.Params, e.Edges, f(e.Parts["process"]), f(e.Parts["index"]), f(rows),
			f(oocBuffers), 100*oocSlack)
	case !planned:
		return fmt.Sprintf("memory cap %s is below the %s this run needs already while reading (%d samples, "+
			"%d parameters, %d edges so far): the process before the run %s, the ids read so far %s, "+
			"plus %s of buffers and %.0f%% of the ids for the garbage collector",
			f(e.Cap), f(e.Need), e.Samples, e.Params, e.Edges, f(e.Parts["process"]), f(e.Parts["index"]),
			f(oocBuffers), 100*oocSlack)
	}
	largest := fmt.Sprintf("the largest of: neighbour sets and machine masks %s plus a block %s, the shuffle %s, the parameter step %s",
		f(e.Parts["sets"]), f(e.Parts["block"]), f(e.Parts["shuffle"]), f(e.Parts["params"]))
	if rows > 0 {
		largest += ", sorting a range of SNAP sources " + f(rows)
	}
	return fmt.Sprintf("memory cap %s is below the %s this run needs (%d samples, %d parameters, %d edges): "+
		"the process before the run %s, the id index %s, %s; plus %s of buffers and %.0f%% of the arrays for the garbage collector",
		f(e.Cap), f(e.Need), e.Samples, e.Params, e.Edges, f(e.Parts["process"]), f(e.Parts["index"]), largest,
		f(oocBuffers), 100*oocSlack)
}

// ParseBytes parses a memory size: a number with an optional unit, B, K,
// KB, KiB, M, MB, MiB, G, GB, GiB, T, TB or TiB (any case). KB, MB, GB
// and TB are powers of 1000, the others of 1024 ("64M" is 64 MiB).
func ParseBytes(s string) (int64, error) {
	return membudget.ParseSize(s, "size", "a number of bytes with an optional unit (64MiB, 1.5GB, 512K)")
}

// FormatBytes writes a size in the largest binary unit below it.
func FormatBytes(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	x := float64(b)
	u := 0
	for x >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.1f %s", x, units[u])
}

// rssField returns a field of /proc/self/status in bytes, or 0.
func rssField(name string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(name+":")); ok {
			fields := strings.Fields(string(v))
			if len(fields) >= 1 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// goMapped returns the memory the Go runtime has mapped and not released
// to the system: what its memory limit counts.
func goMapped() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// peakRSS returns the peak resident memory of the process (VmHWM of
// /proc/self/status), or 0 where there is none.
func peakRSS() int64 { return rssField("VmHWM") }

// heapBytes returns the heap memory the Go runtime holds for objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// PeakRSS returns the peak resident memory of this process (VmHWM), 0
// where the system does not tell.
func PeakRSS() int64 { return peakRSS() }
