package kv

import (
	"errors"
	"fmt"
	"slices"
)

// ErrKeysOrder is returned by AppendKeys for keys that are not strictly
// increasing.
var ErrKeysOrder = errors.New("kv: keys are not strictly increasing")

// ErrKeysEncoding is wrapped by the errors of DecodeKeys.
var ErrKeysEncoding = errors.New("kv: bad key encoding")

// KeysSize returns the number of bytes AppendKeys writes for keys, and
// false when keys are not strictly increasing. It runs in O(n) and does
// not allocate.
func KeysSize(keys []uint64) (int, bool) {
	if len(keys) == 0 {
		return 0, true
	}
	n := uvarintLen(keys[0])
	prev := keys[0]
	for _, k := range keys[1:] {
		if k <= prev {
			return 0, false
		}
		if v := k - prev - 1; v < 1<<14 {
			n += int(1 + (v+0x3f80)>>14)
		} else {
			n += uvarintLen(v)
		}
		prev = k
	}
	return n, true
}

// AppendKeys appends the gap encoding of strictly increasing keys to dst
// and returns the extended slice: the first key as an unsigned varint,
// then k[i]−k[i−1]−1 for each following key. It returns dst unchanged and
// ErrKeysOrder when keys are not strictly increasing.
func AppendKeys(dst []byte, keys []uint64) ([]byte, error) {
	if len(keys) == 0 {
		return dst, nil
	}
	start := len(dst)
	// Write by index into spare capacity, growing in blocks: most gaps
	// take one or two bytes, written without data-dependent branches.
	b := dst[:cap(dst)]
	n := start
	prev := keys[0]
	v := prev
	for i := 0; ; {
		if n+binaryMaxVarintLen > len(b) {
			b = slices.Grow(b[:n], binaryMaxVarintLen+2*(len(keys)-i))
			b = b[:cap(b)]
		}
		if v < 1<<14 {
			c := (v + 0x3f80) >> 14 // 1 when v needs two bytes
			b[n] = byte(v) | byte(c<<7)
			b[n+1] = byte(v >> 7)
			n += int(1 + c)
		} else {
			for v >= 0x80 {
				b[n] = byte(v) | 0x80
				v >>= 7
				n++
			}
			b[n] = byte(v)
			n++
		}
		i++
		if i == len(keys) {
			break
		}
		k := keys[i]
		if k <= prev {
			return dst[:start], fmt.Errorf("%w: key %d (%d) after %d", ErrKeysOrder, i, k, prev)
		}
		v = k - prev - 1
		prev = k
	}
	return b[:n], nil
}

// binaryMaxVarintLen is the longest varint of a uint64.
const binaryMaxVarintLen = 10

// DecodeKeys decodes exactly n keys written by AppendKeys, which must
// occupy all of src, appending them to dst[:0] (reusing its capacity) and
// returning the result. It checks n against len(src) before allocating,
// since every key takes at least one byte, and rejects truncated or
// overlong varints, keys past 2^64−1 and trailing bytes with an error
// wrapping ErrKeysEncoding that gives the byte offset.
func DecodeKeys(dst []uint64, src []byte, n int) ([]uint64, error) {
	if n < 0 || n > len(src) {
		return dst[:0], fmt.Errorf("%w: %d keys cannot fit in %d bytes", ErrKeysEncoding, n, len(src))
	}
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	if n == 0 {
		if len(src) != 0 {
			return dst[:0], fmt.Errorf("%w: %d trailing bytes after 0 keys", ErrKeysEncoding, len(src))
		}
		return dst, nil
	}
	prev, pos := uvarint(src)
	if pos <= 0 {
		return dst[:0], fmt.Errorf("%w: key 0 at byte 0: %s", ErrKeysEncoding, uvarintErr(pos))
	}
	dst[0] = prev
	for i := 1; i < len(dst); i++ {
		// Gaps of one or two bytes, the common case, decoded without
		// data-dependent branches: c is 1 when the gap takes two bytes.
		var v uint64
		if pos+1 < len(src) {
			b0, b1 := uint64(src[pos]), uint64(src[pos+1])
			c := b0 >> 7
			x := (b1-1)>>7 | b1>>7 // ≠ 0 unless 1 ≤ b1 ≤ 0x7f
			if c&((x|-x)>>63) == 0 {
				v = b0&0x7f | b1<<7&-c
				pos += int(1 + c)
				goto decoded
			}
		}
		{
			var w int
			if v, w = uvarint(src[pos:]); w <= 0 {
				return dst[:0], fmt.Errorf("%w: key %d at byte %d: %s", ErrKeysEncoding, i, pos, uvarintErr(w))
			}
			pos += w
		}
	decoded:
		next := prev + v + 1
		if next <= prev {
			return dst[:0], fmt.Errorf("%w: key %d overflows 64 bits", ErrKeysEncoding, i)
		}
		dst[i], prev = next, next
	}
	if pos != len(src) {
		return dst[:0], fmt.Errorf("%w: %d trailing bytes after %d keys", ErrKeysEncoding, len(src)-pos, n)
	}
	return dst, nil
}

// uvarintLen returns the encoded size of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// uvarint decodes a minimal varint from b. It returns the width, or 0 when
// b ends inside the varint, -1 when it overflows 64 bits and -2 when it is
// not minimal (a final zero byte after the first).
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	var v uint64
	var s uint
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		if c < 0x80 {
			if i == 9 && c > 1 {
				return 0, -1
			}
			if c == 0 {
				return 0, -2
			}
			return v | uint64(c)<<s, i + 1
		}
		v |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// uvarintErr describes a failed uvarint.
func uvarintErr(w int) string {
	switch w {
	case 0:
		return "truncated varint"
	case -1:
		return "varint overflows 64 bits"
	default:
		return "overlong varint"
	}
}
