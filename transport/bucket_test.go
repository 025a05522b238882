package transport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestTokenBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1000, 100) // 1000 B/s, 100 B burst
		ctx := context.Background()
		start := time.Now()
		must := func(n int, want time.Duration) {
			t.Helper()
			if err := b.Wait(ctx, n); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("after %d bytes: %v elapsed, want %v", n, got, want)
			}
		}
		must(100, 0)                      // the burst
		must(500, 500*time.Millisecond)   // paid at 1000 B/s
		must(1000, 1500*time.Millisecond) // more than the burst at once
		time.Sleep(10 * time.Second)      // refills to the burst, no more
		start = time.Now()
		must(100, 0)
		must(50, 50*time.Millisecond)
	})
}

func TestTokenBucketConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1e6, 0)
		start := time.Now()
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for range 10 {
					b.Wait(context.Background(), 10_000)
				}
			})
		}
		wg.Wait()
		// 1 MB at 1 MB/s, however the waiters interleave.
		if got := time.Since(start); got != time.Second {
			t.Fatalf("1 MB took %v, want 1s", got)
		}
	})
}

func TestTokenBucketCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(100, 0)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := b.Wait(ctx, 1000); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait: %v", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("cancelled after %v", got)
		}
	})
}

// TestWaitAll checks that bytes through several buckets wait for the
// slowest, and that every bucket counts them (Taken).
func TestWaitAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nic, path := NewTokenBucket(1000, 0), NewTokenBucket(250, 0)
		start := time.Now()
		if err := WaitAll(context.Background(), []*TokenBucket{nic, path}, 500); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("500 bytes through 1000 and 250 B/s: %v, want 2s (the path's pace)", got)
		}
		// Another 500 bytes through the interface alone: its debt was
		// repaid 1.5 s ago, and a burst-0 bucket banks nothing since.
		start = time.Now()
		if err := WaitAll(context.Background(), []*TokenBucket{nic}, 500); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 500*time.Millisecond {
			t.Errorf("500 bytes through an idle interface: waited %v, want 500ms", got)
		}
		if nic.Taken() != 1000 || path.Taken() != 500 {
			t.Errorf("taken: interface %d, path %d; want 1000 and 500", nic.Taken(), path.Taken())
		}
		if err := WaitAll(context.Background(), nil, 1<<20); err != nil {
			t.Errorf("no buckets: %v", err)
		}
	})
}
