package ooc

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"

	"colo/partition"
	"colo/placement"
)

// The memory of a machine of a distributed run (FilePlanOptions.Machine):
// what PlanParsaFile plans for, and the cap a machine keeps to.

// Machine describes the machine of a distributed run that plans a file
// (PlanParsaFile): its memory cap, the number of machines, and what its
// parameter server holds.
type Machine struct {
	// Memory caps the machine's process in bytes (0: no cap). The plan
	// checks the id index against it while the file is read, and then
	// picks the number of blocks (when partition.Options.Parsa.Blocks is 0) that
	// keeps the run's estimate under it; a cap below what the run needs
	// with any number of blocks is a *MemoryError that says how much it
	// needs, and why. LimitMemory makes the Go runtime keep to it.
	Memory int64
	// Workers is the number of machines W.
	Workers int
	// Rank is this machine's, and Sum, when there are several, the
	// all-reduce of the run (as FileRanges.Sum): the machines agree on
	// the largest of their processes' sizes before the run, so that
	// every machine draws the same plan.
	Rank int
	Sum  func(vals []float64) ([]float64, error)
	// Process is the size of the machine's process before the run; 0
	// measures it (its resident memory).
	Process int64
	// Server returns the bytes that one machine's server holds for a
	// graph of n samples and m parameters, its share of the job's key
	// space with the round's sums: sets from the start, params more for
	// the parameter assignment.
	Server func(n, m int) (sets, params int64)
}

// msgCopies is how many times a block's values (k float32s per
// parameter) are held while its pull or push travels: the worker's
// array, reused from the pull to the push; the frames and the servers'
// copies of a push that they hold until the round completes are each a
// share of it, for a short time. Measured: machine 0 of a W = 2 run of
// 100M edges needed about 1.1 of them, with the global block's, and of
// a W = 4 run more (it went 2% over a cap with 1.25).
const msgCopies = 1.5

// machineNeed returns what a machine of a distributed run over b blocks
// needs. Every machine plans for machine 0, which needs the most (the
// global initialisation's block, the whole placement at the end), so
// that all of them draw the same plan from the same counts. The phases
// are the blocks (machine 0's global block first), the end on machine 0
// (gathering, repairing, evaluating and writing the placement) and the
// parameter assignment; the index, the server's keys, the masks C_v of
// the machine's samples and its samples' partitions live throughout.
func (r *oocRun) machineNeed(b int, mc *Machine, process int64) memNeed {
	n, m, e := int64(r.n), int64(r.m), r.st.Edges
	if e == 0 {
		e = r.e
	}
	k, w, W := int64(r.k), int64(r.w), int64(max(1, mc.Workers))
	var idx int64
	if r.params != nil {
		idx += r.params.bytes()
	}
	if r.nodes != nil {
		idx += r.nodes.bytes()
	}
	var server, serverParams int64
	if mc.Server != nil {
		server, serverParams = mc.Server(r.n, r.m)
	}
	msg := func(params int64) int64 { return int64(msgCopies * 4 * float64(k*params)) }
	// The distinct parameters of a random block of e edges: at most
	// m·(1 − exp(−e/m)), which equal degrees reach (the expectation is
	// concave in each degree), with 10% of room.
	distinct := func(e int64) int64 {
		if m == 0 {
			return 0
		}
		return min(e, m, int64(1.1*float64(m)*-math.Expm1(-float64(e)/float64(m))))
	}
	nb := (n+int64(b)-1)/int64(b) + 1
	eb := int64(math.Ceil(1.1*float64(e)/float64(b))) + int64(r.maxDeg)
	nb, eb = min(nb, n), min(eb, e)
	mb := distinct(eb)
	block := blockBytes(nb, eb, mb, r.k, r.w, r.maxDeg) + msg(mb) + 12*nb + 4*eb
	var global int64
	if r.po.Init == partition.InitGlobal {
		ng := min(n, int64(partition.GlobalSize(r.po, r.n, e))+1)
		eg := min(e, int64(math.Ceil(1.1*float64(ng)/float64(max(1, n))*float64(e)))+int64(r.maxDeg))
		mg := distinct(eg)
		global = blockBytes(ng, eg, mg, r.k, r.w, r.maxDeg) + msg(mg) + 12*ng + 4*eg
	}
	return memNeed{parts: map[string]int64{
		"process": process,
		"index":   idx,
		"server":  server,
		"masks":   8 * w * m,
		"own":     int64(math.Ceil(1.1 * 8 * float64(n) / float64(W))),
		"block":   block,
		"global":  global,
		// Machine 0's end of the blocks: the gathered partitions, the
		// placement and its copy before the repair, the repair's masks.
		"end": 16*n + 4*m + 8*w*m,
		// Machine 0's evaluation of the placement with the random
		// baseline's, after Alg. 2, whose keys the server still holds,
		// and after the masks and the samples' partitions are dropped:
		// the placement and at least one mask and one goroutine's
		// parameters, a pass each (more when the cap leaves room:
		// machineEvalBudget).
		"evaluate": serverParams + 4*n + 4*m + leastEval(m, w),
		// Alg. 2: the server's keys of the masks C_v, every c_v, the
		// order, the masks of a slice, a chunk of masks pushed.
		"params": serverParams + 16*m + 16*w*m/W + msg(min(1<<16, m)),
	}}
}

// machineTotal is the total of a machine's need: the phases one after
// the other on what lives throughout, and the room left for the
// runtime's soft limit.
func machineTotal(n memNeed) int64 {
	base := machineBase(n)
	return base + limitMargin(base)
}

// machineBase is machineTotal without the room for the limit.
func machineBase(n memNeed) int64 {
	p := n.parts
	arrays := p["index"] + p["server"] + p["masks"] + p["own"] + machineTop(n)
	return p["process"] + oocBuffers + arrays + int64(oocSlack*float64(arrays))
}

// machineTop is the largest phase of n on top of what lives throughout:
// the evaluation drops the masks and the samples' partitions.
func machineTop(n memNeed) int64 {
	p := n.parts
	return max(p["block"], p["global"], p["end"], p["params"], p["evaluate"]-p["masks"]-p["own"])
}

// leastEval is the least that evaluating a placement with the random
// baseline's takes (oocRun.evaluate): one mask and one goroutine's
// parameters, a pass over the rows per placement.
func leastEval(m, w int64) int64 { return 8*w*m + 4*m }

// machineEvalBudget returns the bytes of arrays that machine 0's
// evaluation of the placement and the random baseline may take
// (oocRun.evaluate), at least leastEval and at most the masks of all the
// placements and two goroutines' parameters (one pass on two cores):
// what the plan's largest phase leaves it, and with a cap what the cap
// leaves besides, without one up to a quarter of the memory available.
func (r *oocRun) machineEvalBudget(n memNeed, capBytes int64) int64 {
	m, w := int64(r.m), int64(r.w)
	least := leastEval(m, w)
	most := int64(1+placement.BaselineSeeds)*8*w*m + 2*4*m
	// The evaluation holds, beside its arrays, evaluate − least; it
	// drops the masks and the partitions, and the plan counts the
	// largest phase on top of them.
	p := n.parts
	avail := machineTop(n) + p["masks"] + p["own"] - (p["evaluate"] - least)
	if capBytes > 0 {
		avail += int64(float64(max(0, capBytes-machineTotal(n))) / (1 + oocSlack))
	} else {
		avail = max(avail, availableMemory()/4)
	}
	return min(most, max(least, avail))
}

// limitMargin is the room that LimitMemory leaves below a cap: the
// runtime's limit is soft, and overshoots by a few percent when the live
// arrays come close to it, and code and threads first used during the
// run are outside it.
func limitMargin(cap int64) int64 { return max(oocMargin, cap/12) }

// machinePlan returns the number of blocks of a distributed run under
// mc's cap, starting from b: b doubled (smaller blocks) while the need is
// over the cap and falls, and what the run needs then. blocks > 0 (the
// caller's own number) is kept as it is.
func (r *oocRun) machinePlan(b, blocks int, mc *Machine) (int, memNeed, error) {
	process := r.baseRSS
	if mc.Process > 0 {
		process = mc.Process
	}
	if mc.Sum != nil && mc.Workers > 1 {
		vals := make([]float64, mc.Workers)
		vals[mc.Rank] = float64(process)
		got, err := mc.Sum(vals)
		if err != nil {
			return 0, memNeed{}, fmt.Errorf("%s: the sum of the machines' sizes: %w", r.path, err)
		}
		if len(got) != mc.Workers {
			return 0, memNeed{}, fmt.Errorf("%s: the sum of the machines' sizes has %d values, want %d", r.path, len(got), mc.Workers)
		}
		process = int64(slices.Max(got))
	}
	clip := func(b int) int { return max(1, min(b, r.n)) }
	b = clip(b)
	need := r.machineNeed(b, mc, process)
	for blocks <= 0 && mc.Memory > 0 && machineTotal(need) > mc.Memory && b < r.n {
		nb := clip(2 * b)
		nd := r.machineNeed(nb, mc, process)
		if machineTotal(nd) >= machineTotal(need) {
			break
		}
		b, need = nb, nd
	}
	need.parts["margin"] = limitMargin(machineBase(need))
	return b, need, nil
}

// machineError is the error of a machine whose cap is below its need.
func (r *oocRun) machineError(cap int64, need memNeed, b int) error {
	return &MemoryError{Cap: cap, Need: machineTotal(need), Parts: need.parts, Samples: r.n, Params: r.m, Edges: r.st.Edges,
		Blocks: b, FixedBlocks: r.po.Blocks > 0}
}

// LimitMemory makes the Go runtime keep this process under cap bytes
// (0: no limit), leaving room for what the process holds outside the
// runtime (its code) and limitMargin for the runtime's overshoot, and
// returns the function that restores the limit before. The limit is the
// process's: one machine to a process.
func LimitMemory(cap int64) (restore func()) {
	if cap <= 0 {
		return func() {}
	}
	return limitMemory(cap, limitMargin(cap))
}

// limitMemory sets the Go runtime's memory limit to cap less margin and
// less what the process holds outside the runtime (the program's code,
// mostly, which counts against the cap but not against the limit), and
// returns the function that restores the limit before.
func limitMemory(cap, margin int64) (restore func()) {
	outside := max(0, rssField("VmRSS")-goMapped())
	old := debug.SetMemoryLimit(max(1<<20, cap-outside-margin))
	return func() { debug.SetMemoryLimit(old) }
}

// validMachine checks mc.
func validMachine(mc *Machine) error {
	switch {
	case mc.Memory < 0 || mc.Process < 0:
		return fmt.Errorf("memory cap = %d, process = %d: want 0 (none, measured) or a number of bytes", mc.Memory, mc.Process)
	case mc.Workers < 1:
		return fmt.Errorf("machine of %d workers: want at least 1", mc.Workers)
	case mc.Rank < 0 || mc.Rank >= mc.Workers:
		return fmt.Errorf("machine %d of %d: want a rank in [0, %d)", mc.Rank, mc.Workers, mc.Workers)
	}
	return nil
}
