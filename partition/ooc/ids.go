package ooc

import (
	"math/bits"
	"slices"
)

// idIndex collects the distinct raw ids of a file (libsvm indices, SNAP
// node ids) and then numbers them 0..len−1 in increasing order, as the
// graph loaders do. Dense id ranges are a bitmap with a rank per word
// (12 bytes per 64 possible ids); once the bitmap would be larger than
// a sorted list of the ids seen (8 bytes each) it turns into one, so
// that a huge id costs memory in proportion to the ids, not to its value.
type idIndex struct {
	bitmap []uint64
	rank   []uint32 // ids below word x: set by finish
	count  int      // distinct ids in the bitmap

	sparse bool
	sorted []uint64 // sorted distinct ids
	buf    []uint64 // ids added since the last merge
}

// minBitmapBytes is the size below which the bitmap is always kept.
const minBitmapBytes = 1 << 20

// add records an id.
func (x *idIndex) add(id uint64) {
	if !x.sparse {
		w := id / 64
		if w < uint64(len(x.bitmap)) {
			bit := uint64(1) << (id % 64)
			if x.bitmap[w]&bit == 0 {
				x.bitmap[w] |= bit
				x.count++
			}
			return
		}
		if (w+1)*12 <= max(minBitmapBytes, 8*uint64(x.count+1)) {
			x.bitmap = slices.Grow(x.bitmap, int(w+1)-len(x.bitmap))[:w+1]
			x.bitmap[w] |= 1 << (id % 64)
			x.count++
			return
		}
		x.toSparse()
	}
	x.buf = append(x.buf, id)
	if len(x.buf) >= max(1<<16, len(x.sorted)) {
		x.merge()
	}
}

// toSparse turns the bitmap into a sorted list.
func (x *idIndex) toSparse() {
	x.sorted = make([]uint64, 0, x.count)
	x.each(func(id uint64) { x.sorted = append(x.sorted, id) })
	x.sparse = true
	x.bitmap = nil
}

// merge adds the buffered ids to the sorted list.
func (x *idIndex) merge() {
	slices.Sort(x.buf)
	x.buf = slices.Compact(x.buf)
	out := make([]uint64, 0, len(x.sorted)+len(x.buf))
	i, j := 0, 0
	for i < len(x.sorted) || j < len(x.buf) {
		switch {
		case j == len(x.buf) || (i < len(x.sorted) && x.sorted[i] < x.buf[j]):
			out = append(out, x.sorted[i])
			i++
		case i == len(x.sorted) || x.buf[j] < x.sorted[i]:
			out = append(out, x.buf[j])
			j++
		default:
			out = append(out, x.sorted[i])
			i++
			j++
		}
	}
	x.sorted, x.buf = out, x.buf[:0]
}

// finish ends the adds and prepares dense.
func (x *idIndex) finish() {
	if x.sparse {
		x.merge()
		x.buf = nil
		return
	}
	x.rank = make([]uint32, len(x.bitmap))
	var r uint32
	for w, b := range x.bitmap {
		x.rank[w] = r
		r += uint32(bits.OnesCount64(b))
	}
}

// len returns the number of distinct ids.
func (x *idIndex) len() int {
	if x.sparse {
		return len(x.sorted)
	}
	return x.count
}

// dense returns the dense id of an id that was added.
func (x *idIndex) dense(id uint64) uint32 {
	if x.sparse {
		i, _ := slices.BinarySearch(x.sorted, id)
		return uint32(i)
	}
	w := id / 64
	return x.rank[w] + uint32(bits.OnesCount64(x.bitmap[w]&(1<<(id%64)-1)))
}

// each calls f with every id in increasing order.
func (x *idIndex) each(f func(id uint64)) {
	if x.sparse {
		for _, id := range x.sorted {
			f(id)
		}
		return
	}
	for w, b := range x.bitmap {
		for b != 0 {
			f(uint64(w)*64 + uint64(bits.TrailingZeros64(b)))
			b &= b - 1
		}
	}
}

// bytes returns the memory the index holds after finish.
func (x *idIndex) bytes() int64 {
	if x.sparse {
		return 8 * int64(cap(x.sorted))
	}
	return 12 * int64(len(x.bitmap))
}

// heldBytes returns the memory the index holds while ids are added.
func (x *idIndex) heldBytes() int64 {
	return 8 * int64(cap(x.bitmap)+cap(x.sorted)+cap(x.buf))
}
