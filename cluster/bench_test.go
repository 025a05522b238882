package cluster

import (
	"colo/ps/node"
	"context"
	"testing"
)

// BenchmarkClusterStart starts and stops a cluster of 2 machines over
// TCP loopback: scheduler, registration, endpoints, address book.
func BenchmarkClusterStart(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Network = node.TCP{}
	for b.Loop() {
		c, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e3, "ms/start")
}
