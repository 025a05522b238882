package graph

import (
	"colo/internal/decompress"

	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// genLibSVM returns about size bytes of libsvm text shaped like bag-of-words
// data: class labels, 20 to 300 increasing indices per row out of 60,000,
// and values that are small counts or six-digit decimals (tf-idf weights).
func genLibSVM(seed uint64, size int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	buf := make([]byte, 0, size+4096)
	for len(buf) < size {
		buf = strconv.AppendInt(buf, int64(1+rng.IntN(20)), 10)
		id := 0
		for range 20 + rng.IntN(280) {
			id += 1 + rng.IntN(200)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(id), 10)
			buf = append(buf, ':')
			if rng.IntN(2) == 0 {
				buf = strconv.AppendInt(buf, int64(1+rng.IntN(12)), 10)
			} else {
				buf = append(buf, "0."...)
				buf = strconv.AppendInt(buf, int64(100000+rng.IntN(900000)), 10)
			}
		}
		buf = append(buf, '\n')
	}
	return buf
}

// BenchmarkReadLibSVM measures the libsvm reader on 16 MB of generated text
// in memory; the MB/s column is the throughput.
func BenchmarkReadLibSVM(b *testing.B) {
	data := genLibSVM(1, 16<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadLibSVM(bytes.NewReader(data), "bench.svm", DefaultLoadOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

// decompressed returns the contents of the file at path, decompressed
// as its leading bytes say (see decompress.NewReader).
func decompressed(b *testing.B, path string) []byte {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dr, err := decompress.NewReader(f)
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(dr)
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return data
}

// BenchmarkReadLibSVM20News measures the libsvm reader on the 20
// Newsgroups training set, decompressed in memory beforehand.
func BenchmarkReadLibSVM20News(b *testing.B) {
	p := dataFile(b, "20news-bydate/20news-bydate.train.libsvm.xz")
	data := decompressed(b, p)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadLibSVM(bytes.NewReader(data), p, DefaultLoadOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSNAP measures the edge-list reader on one million random
// edges among 100,000 nodes, read as undirected (two million graph edges).
func BenchmarkReadSNAP(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 1))
	var data []byte
	for range 1000000 {
		data = strconv.AppendInt(data, int64(rng.IntN(100000)), 10)
		data = append(data, '\t')
		data = strconv.AppendInt(data, int64(rng.IntN(100000)), 10)
		data = append(data, '\n')
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadSNAP(bytes.NewReader(data), "bench.txt", true, DefaultLoadOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadLibSVMPeakHeap loads 50 MB of generated libsvm text from a
// file and reports the memory the load needed relative to the finished
// graph (Graph.Bytes):
//
//   - peak-inuse/graph: the largest runtime.MemStats.HeapInuse seen while
//     loading, sampled every millisecond, minus HeapInuse before the load.
//     Sampling can miss a short spike, and HeapInuse counts garbage not yet
//     collected as well as live data.
//   - alloc/graph: all bytes allocated by the load (TotalAlloc), an upper
//     bound on the peak.
func BenchmarkLoadLibSVMPeakHeap(b *testing.B) {
	path := filepath.Join(b.TempDir(), "peak.svm")
	if err := os.WriteFile(path, genLibSVM(3, 50<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	var peakRatio, allocRatio float64
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var (
			peak uint64
			stop = make(chan struct{})
			wg   sync.WaitGroup
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		g, err := Load(path, DefaultLoadOptions())
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		peak = max(peak, after.HeapInuse)
		peakRatio = float64(peak-before.HeapInuse) / float64(g.Bytes())
		allocRatio = float64(after.TotalAlloc-before.TotalAlloc) / float64(g.Bytes())
		runtime.KeepAlive(g)
	}
	b.ReportMetric(peakRatio, "peak-inuse/graph")
	b.ReportMetric(allocRatio, "alloc/graph")
}

// BenchmarkLoadLibSVMFile reads 64 MB of generated libsvm text from a file
// on one goroutine and on GOMAXPROCS (the default of Load); the MB/s
// column is the throughput.
func BenchmarkLoadLibSVMFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.svm")
	data := genLibSVM(2, 64<<20)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				_, err = readLibSVM(f, path, DefaultLoadOptions(), workers, chunkBytes, -1)
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadDatasets loads 20 Newsgroups' training set (libsvm) and
// soc-Slashdot0902 (a SNAP edge list) from plain files, decompressed
// beforehand, as colo partition does: bytes and allocations per load
// (B/op, allocs/op), B/op relative to the graph's arrays (Graph.Bytes)
// as alloc/graph, and on Unix the process's minor page faults per load
// (faults/op). Memory touched for the first time costs a page fault, on
// some virtual machines more than the parsing; capacity never written
// (as much of a libsvm arena, sized from the file, as the file has no
// edges for) counts in B/op but costs no fault. Later loads reuse the
// pages the garbage collector freed, so faults/op is below a fresh
// process's. It skips when ../shared/data is absent.
func BenchmarkLoadDatasets(b *testing.B) {
	for _, d := range []struct{ name, rel string }{
		{"20news", "20news-bydate/20news-bydate.train.libsvm.xz"},
		{"slashdot", "soc-Slashdot0902/soc-Slashdot0902.txt.gz"},
	} {
		b.Run(d.name, func(b *testing.B) {
			data := decompressed(b, dataFile(b, d.rel))
			path := filepath.Join(b.TempDir(), d.name+".txt")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var (
				g             *Graph
				err           error
				before, after runtime.MemStats
			)
			runtime.ReadMemStats(&before)
			faults := minorFaults()
			for b.Loop() {
				if g, err = Load(path, DefaultLoadOptions()); err != nil {
					b.Fatal(err)
				}
			}
			if faults >= 0 {
				b.ReportMetric(float64(minorFaults()-faults)/float64(b.N), "faults/op")
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(g.Bytes()), "alloc/graph")
		})
	}
}
