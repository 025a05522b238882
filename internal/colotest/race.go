//go:build race

package colotest

// Race reports whether the tests run under the race detector (go test
// -race), which makes them several times slower: such a run may leave
// out what checks nothing about concurrency (a model's quality, a
// placement's), which the run without the detector checks.
const Race = true
