package kv

import (
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/cluster"
	"colo/internal/workload"
	"colo/metrics"
	"colo/ps/worker"
)

// BenchmarkScrapeWindows measures what scraping --metrics costs colo
// bench kv's 2 × 2 lines, where side-by-side runs of the command cannot
// resolve a few percent on a shared machine: one cluster per request kind
// runs for COLO_SCRAPE_WINDOWS (10s when unset) under the collector of
// colo bench kv --metrics, in windows of 250 ms that alternate between no
// scrape and a scrape every 10 ms (about 70 a second, gzip as Prometheus
// asks for it); load that comes and goes on the machine falls on both
// kinds of window alike. It reports the requests of the scraped windows
// over those of the unscraped ones in percent (all windows summed;
// the median pair is logged), and the scrapes per second, from which the
// cost of one scrape a second follows.
//
//	COLO_SCRAPE_WINDOWS=30s go test ./bench/kv -run '^$' -bench ScrapeWindows -benchtime 1x
func BenchmarkScrapeWindows(b *testing.B) {
	total := 10 * time.Second
	if v := os.Getenv("COLO_SCRAPE_WINDOWS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("COLO_SCRAPE_WINDOWS=%q: want a positive duration such as 30s", v)
		}
		total = d
	}
	const window, every = 250 * time.Millisecond, 10 * time.Millisecond
	keys := workload.SparseKeySet()
	vals := make([]float32, workload.DenseVals)
	for i := range vals {
		vals[i] = 1
	}
	calls := map[kvKind]func(w *worker.Worker, dst []float32) *worker.Future{
		{"sparse", "push"}: func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) },
		{"sparse", "pull"}: func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) },
		{"dense", "push"}:  func(w *worker.Worker, _ []float32) *worker.Future { return w.PushRange(0, vals) },
		{"dense", "pull"}:  func(w *worker.Worker, dst []float32) *worker.Future { return w.PullRange(0, uint64(len(vals)), dst) },
	}
	for _, kind := range kvKinds {
		b.Run(kind.mode+"-"+kind.op, func(b *testing.B) {
			reg := metrics.NewRegistry()
			nodes := metrics.NewNodesCollector(nil)
			reg.MustRegister(nodes)
			metrics.NewTraining(reg)
			addr, stop, err := metrics.Serve("127.0.0.1:0", reg)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			c, err := cluster.Start(context.Background(), benchConfig(2, 2, kind.space(len(vals)), true, nil))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			nodes.Set(c.Stats)
			var done atomic.Int64
			var end atomic.Bool
			var wg sync.WaitGroup
			defer wg.Wait()
			defer end.Store(true)
			for i := range c.NumWorkers() {
				wg.Go(func() {
					dst := make([]float32, len(vals))
					for !end.Load() {
						if err := calls[kind](c.Worker(i), dst).Wait(); err != nil {
							b.Error(err)
							return
						}
						done.Add(1)
					}
				})
			}
			scrape := func() {
				r, err := http.Get("http://" + addr + "/metrics")
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
			scrape() // the connection and the collectors' first read
			var ratios []float64
			var sumOn, sumOff float64
			scrapes := 0
			for begin := time.Now(); time.Since(begin) < total; {
				// Pairs in both orders: on, off, off, on, …
				var on, off float64
				for i := range 2 {
					scraped := (i == 0) == (len(ratios)%2 == 0)
					n0, t0 := done.Load(), time.Now()
					for time.Since(t0) < window {
						if scraped {
							scrape()
							scrapes++
						}
						time.Sleep(min(every, window-time.Since(t0)))
					}
					rate := float64(done.Load()-n0) / time.Since(t0).Seconds()
					if scraped {
						on = rate
					} else {
						off = rate
					}
				}
				sumOn, sumOff = sumOn+on, sumOff+off
				ratios = append(ratios, on/max(off, 1e-9))
			}
			slices.Sort(ratios)
			perSecond := float64(scrapes) / (float64(len(ratios)) * window.Seconds())
			b.Logf("2×2 %s %s: %d pairs of %v windows, %.0f scrapes/s when on: requests scraped/unscraped %.1f%% (median pair %.1f%%)",
				kind.mode, kind.op, len(ratios), window, perSecond, 100*sumOn/sumOff, 100*ratios[len(ratios)/2])
			b.ReportMetric(100*sumOn/sumOff, "%scraped/unscraped")
			b.ReportMetric(perSecond, "scrapes/s")
		})
	}
}
