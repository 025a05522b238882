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
