package launch

import (
	"fmt"
	"math"
)

// MaxProcesses bounds the members (machines, or servers and workers
// apart, and evaluators) that one launch starts on this host: a Cluster,
// and every command that starts one (colo launch, colo run, colo train
// --processes, colo partition --processes), refuses more before it
// starts anything, naming the flag. Each member is a process of its own
// (a Go runtime, or colo run's program, such as a Python interpreter
// with its imports) and every worker keeps a link to every server, so K
// machines hold about K² connections on the one host: a count such as
// 100000, one zero too many, would run the host out of memory, process
// slots or file descriptors long before the job formed, after starting
// thousands of processes. The bound is generous on purpose, to refuse
// only such mistakes: a host runs a few workers a core or an
// accelerator, and 4096 is also the most machines a bandwidth matrix
// holds (transport.ParseBandwidth). A host whose own limits are lower
// (ulimit -u, ulimit -n) stops a launch within the bound at the first
// process it cannot start, naming it. A cluster larger than one host
// runs under a launcher of many hosts (mpirun, srun, Kubernetes:
// docs/deploy.md), which this bound does not concern.
const MaxProcesses = 4096

// CheckProcesses returns an error when the processes that what asks for
// (the flags or fields that set them and their values, such as
// "--machines 100000"), the sum of counts, are more than MaxProcesses;
// the error names what, the count and the bound. Negative counts are the
// caller's to refuse; they count as none.
func CheckProcesses(what string, counts ...int) error {
	n := 0
	for _, c := range counts {
		if c > 0 {
			n += min(c, math.MaxInt-n) // no overflow past a bound this far
		}
	}
	if n <= MaxProcesses {
		return nil
	}
	return fmt.Errorf("%s: %d processes on this host, at most %d (launch.MaxProcesses); a larger cluster runs on several hosts (mpirun, srun, Kubernetes: docs/deploy.md)", what, n, MaxProcesses)
}
