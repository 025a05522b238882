// Package cputime reads the processor time of the process, the measure
// of a benchmark's cost that other work on a shared machine does not
// inflate (its wall time includes the waits for a core; its CPU time
// does not):
//
//	t0 := cputime.Process()
//	work()
//	b.ReportMetric(float64(cputime.Process()-t0)/float64(b.N), "cpu-ns/op")
package cputime
