package transport

import (
	"testing"

	"colo/kv"
)

func TestPoolClasses(t *testing.T) {
	for n := 128; n < 1<<22; n += 1 + n/97 {
		c := classOf(n)
		if s := classSize(c); s < n || s > n+n/4+1 {
			t.Fatalf("class of %d has size %d", n, s)
		}
		if c > 0 && classSize(c-1) >= n {
			t.Fatalf("class of %d is not the smallest: %d also fits", n, classSize(c-1))
		}
	}
}

func TestPoolRelease(t *testing.T) {
	var p Pool
	m := &Message{Header: Header{ID: 3}, Body: make([]byte, 5000), KV: kv.Batch{Keys: make([]uint64, 3000), Vals: make([]float32, 3000), Lens: make([]int32, 10)}}
	m.KV.Vals[7] = 7
	c := p.Clone(m)
	if c.pool != &p || c.KV.Vals[7] != 7 || len(c.KV.Keys) != 3000 || len(c.Body) != 5000 {
		t.Fatalf("bad clone %v", c)
	}
	c.Release()
	if c.ID != 3 || c.Body != nil || c.KV.Vals != nil || c.pool != nil {
		t.Fatalf("released message keeps %v", c)
	}
	c.Release() // no-op
	// Arrays from the pool have the asked length whatever they held.
	for range 3 {
		v := get[float32](&p.f32, 2900, 4)
		if len(v) != 2900 || cap(v) < 2900 {
			t.Fatalf("got %d/%d", len(v), cap(v))
		}
		put(&p.f32, v, 4)
	}
	// Messages not from a pool are left alone.
	plain := m.Clone()
	plain.Release()
	if plain.KV.Vals == nil {
		t.Fatal("Release emptied a message without a pool")
	}
}
