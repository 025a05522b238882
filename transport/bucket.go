package transport

import (
	"context"
	"sync"
	"time"
)

// TokenBucket limits a byte stream to a rate. Tokens accrue at Rate bytes
// per second up to Burst; a caller takes n tokens at once, possibly going
// into debt, and waits until the debt is repaid, so a burst-0 bucket
// spaces transfers exactly as a wire of that bandwidth would. It is safe
// for concurrent use and reads the clock only through package time, so it
// runs on fake time inside testing/synctest.
type TokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	taken  int64
}

// NewTokenBucket returns a full bucket of burst bytes filling at rate
// bytes per second. It panics unless rate > 0 and burst ≥ 0, which are
// programming errors (configurations are validated before).
func NewTokenBucket(rate float64, burst int) *TokenBucket {
	if !(rate > 0) || burst < 0 {
		panic("transport: NewTokenBucket needs rate > 0 and burst ≥ 0")
	}
	return &TokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// Rate returns the rate in bytes per second.
func (b *TokenBucket) Rate() float64 { return b.rate }

// Reserve takes n tokens and returns how long the caller must wait before
// using them.
func (b *TokenBucket) Reserve(n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+b.rate*now.Sub(b.last).Seconds())
	}
	b.last = now
	b.taken += int64(n)
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// Taken returns the tokens taken since the bucket was made: the bytes
// that went through it.
func (b *TokenBucket) Taken() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taken
}

// Wait takes n tokens and sleeps until they are paid for, or until ctx is
// done (the tokens stay taken: the bytes are assumed sent).
func (b *TokenBucket) Wait(ctx context.Context, n int) error {
	return WaitAll(ctx, []*TokenBucket{b}, n)
}

// WaitAll takes n tokens from each of buckets and sleeps until the
// longest of their waits is over, or until ctx is done (the tokens stay
// taken): bytes that cross several shared resources, such as a host's
// network interface and the path to another host, go at the pace of the
// slowest. It costs O(len(buckets)) and no allocation.
func WaitAll(ctx context.Context, buckets []*TokenBucket, n int) error {
	var d time.Duration
	for _, b := range buckets {
		d = max(d, b.Reserve(n))
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
