package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"colo/internal/membudget"
)

// The idx element types, from the third byte of the magic number.
const (
	IDXUint8   byte = 0x08
	IDXInt8    byte = 0x09
	IDXInt16   byte = 0x0B
	IDXInt32   byte = 0x0C
	IDXFloat32 byte = 0x0D
	IDXFloat64 byte = 0x0E
)

// maxIDXElements bounds the element count an idx header may declare.
const maxIDXElements = 1 << 36

// IDX is the content of one idx file: an n-dimensional array of one
// element type, stored big-endian.
type IDX struct {
	// Type is the element type, one of the IDX* constants.
	Type byte
	// Dims are the sizes of the dimensions, outermost first.
	Dims []int
	// Data holds the elements, big-endian, Len()·ElemSize(Type) bytes.
	Data []byte
	// Source names the file.
	Source string
}

// ElemSize returns the size in bytes of an idx element type, or 0 for an
// unknown type.
func ElemSize(typ byte) int {
	switch typ {
	case IDXUint8, IDXInt8:
		return 1
	case IDXInt16:
		return 2
	case IDXInt32, IDXFloat32:
		return 4
	case IDXFloat64:
		return 8
	}
	return 0
}

// typeName returns the name of an idx element type.
func typeName(typ byte) string {
	switch typ {
	case IDXUint8:
		return "unsigned byte"
	case IDXInt8:
		return "signed byte"
	case IDXInt16:
		return "int16"
	case IDXInt32:
		return "int32"
	case IDXFloat32:
		return "float32"
	case IDXFloat64:
		return "float64"
	}
	return fmt.Sprintf("type 0x%02x", typ)
}

// Len returns the number of elements.
func (t *IDX) Len() int { return len(t.Data) / ElemSize(t.Type) }

// At returns element i as a float64.
func (t *IDX) At(i int) float64 {
	switch t.Type {
	case IDXUint8:
		return float64(t.Data[i])
	case IDXInt8:
		return float64(int8(t.Data[i]))
	case IDXInt16:
		return float64(int16(binary.BigEndian.Uint16(t.Data[2*i:])))
	case IDXInt32:
		return float64(int32(binary.BigEndian.Uint32(t.Data[4*i:])))
	case IDXFloat32:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(t.Data[4*i:])))
	case IDXFloat64:
		return math.Float64frombits(binary.BigEndian.Uint64(t.Data[8*i:]))
	}
	panic("dataset: unknown idx type")
}

// parseIDXMagic checks the 4-byte magic number of an idx file and returns
// its element type and number of dimensions.
func parseIDXMagic(head []byte) (typ byte, ndim int, err error) {
	if len(head) < 4 {
		return 0, 0, fmt.Errorf("truncated header: %d of 4 magic bytes", len(head))
	}
	magic := binary.BigEndian.Uint32(head)
	if head[0] != 0 || head[1] != 0 || ElemSize(head[2]) == 0 || head[3] == 0 {
		return 0, 0, fmt.Errorf("bad magic 0x%08x: want 0x0000TTNN with element type TT in 08, 09, 0B, 0C, 0D, 0E and NN ≥ 1 dimensions", magic)
	}
	return head[2], int(head[3]), nil
}

// ReadIDX reads one (decompressed) idx file. name is used in errors. It
// rejects a bad magic number, a header that ends early, data shorter than
// the dimensions declare and bytes after the declared data. It is
// ReadIDXBounded with the machine's memory budget and an input of unknown
// size.
func ReadIDX(r io.Reader, name string) (*IDX, error) {
	return ReadIDXBounded(r, name, membudget.Auto, -1)
}

// ReadIDXBounded is ReadIDX within the memory budget memory (see package
// colo/internal/membudget: 0 for the machine's default, negative for
// none) for an input that holds size bytes (negative when unknown, as for
// a compressed stream). Before it reads the data it refuses a header whose
// dimensions declare more bytes than size, or more memory than the budget
// for the data and its float32 features (what FromIDX makes of them:
// Len()·(ElemSize+4) bytes). The data's buffer then grows as the data
// arrives, so a stream that ends early costs what it held.
func ReadIDXBounded(r io.Reader, name string, memory, size int64) (*IDX, error) {
	return readIDX(r, name, memory, size, nil)
}

// readIDX is ReadIDXBounded for images that a model takes: checkDim, when
// not nil, is asked whether it can take samples of the features that the
// dimensions after the first give, before the data is read.
func readIDX(r io.Reader, name string, memory, size int64, checkDim func(dim int) error) (*IDX, error) {
	fail := func(format string, args ...any) error {
		return &ParseError{File: name, Msg: fmt.Sprintf(format, args...)}
	}
	var head [4]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && !isEOF(err) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	typ, ndim, err := parseIDXMagic(head[:n])
	if err != nil {
		return nil, fail("%v", err)
	}
	dimBytes := make([]byte, 4*ndim)
	if n, err := io.ReadFull(r, dimBytes); err != nil {
		if isEOF(err) {
			return nil, fail("truncated header: %d dimensions declared, file ends after %d of their %d bytes", ndim, n, len(dimBytes))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &IDX{Type: typ, Dims: make([]int, ndim), Source: name}
	elems := int64(1)
	for i := range t.Dims {
		t.Dims[i] = int(binary.BigEndian.Uint32(dimBytes[4*i:]))
		if k := int64(t.Dims[i]); k > 0 && elems > maxIDXElements/k {
			return nil, fail("dimensions %s declare more than 2^36 elements", dimString(t.Dims[:i+1]))
		}
		elems *= int64(t.Dims[i])
	}
	if checkDim != nil && len(t.Dims) > 1 {
		dim := int64(1)
		for _, k := range t.Dims[1:] {
			dim = min(dim*int64(k), maxIDXElements) // bounded above: no overflow
		}
		if err := checkDim(int(dim)); err != nil {
			return nil, fail("dimensions %s give samples of %d features: %v", dimString(t.Dims), dim, err)
		}
	}
	esize := int64(ElemSize(typ))
	want := elems * esize
	if data := size - int64(4+len(dimBytes)); size >= 0 && want > data {
		return nil, fail("truncated: dimensions %s of %s declare %d bytes of data, the file has %d",
			dimString(t.Dims), typeName(typ), want, max(data, 0))
	}
	if err := membudget.Check(memory, name, 0, fmt.Sprintf("dimensions %s of %s (%d bytes) and their float32 features", dimString(t.Dims), typeName(typ), want),
		elems*(esize+4)); err != nil {
		return nil, err
	}
	if size >= 0 {
		// The file holds the data: one buffer of its size.
		t.Data = make([]byte, want)
		k, err := io.ReadFull(r, t.Data)
		t.Data = t.Data[:k]
		if err != nil && !isEOF(err) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	} else if t.Data, err = readUpTo(r, want); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(t.Data)) < want {
		return nil, fail("truncated: dimensions %s of %s declare %d bytes of data, the file has %d",
			dimString(t.Dims), typeName(typ), want, len(t.Data))
	}
	var extra [1]byte
	if k, err := io.ReadFull(r, extra[:]); k > 0 {
		return nil, fail("unexpected data after the %d bytes that dimensions %s declare", want, dimString(t.Dims))
	} else if err != nil && !isEOF(err) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// FromIDX joins an idx image file and an idx label file into a dataset.
// The first dimension of images counts the samples and the others are
// flattened into features; unsigned-byte images are scaled to [0, 1]. The
// labels must be a one-dimensional array of integers (or n × 1), one per
// image.
func FromIDX(images, labels *IDX) (*Dataset, error) {
	if len(labels.Dims) != 1 && !(len(labels.Dims) == 2 && labels.Dims[1] == 1) {
		return nil, &ParseError{File: labels.Source, Msg: fmt.Sprintf(
			"labels have dimensions %s: want one dimension (an idx1 file)", dimString(labels.Dims))}
	}
	switch labels.Type {
	case IDXUint8, IDXInt8, IDXInt16, IDXInt32:
	default:
		return nil, &ParseError{File: labels.Source, Msg: fmt.Sprintf(
			"labels are %s: want integer labels", typeName(labels.Type))}
	}
	n := labels.Dims[0]
	if images.Dims[0] != n {
		return nil, fmt.Errorf("%s has %d samples (dimensions %s) but %s has %d labels",
			images.Source, images.Dims[0], dimString(images.Dims), labels.Source, n)
	}
	dim := 1
	for _, k := range images.Dims[1:] {
		// A zero outer dimension lets the others be anything in the
		// file: bound their product here.
		if k > 0 && dim > maxIDXElements/k {
			return nil, &ParseError{File: images.Source, Msg: fmt.Sprintf(
				"dimensions %s give samples of more than 2^36 features", dimString(images.Dims))}
		}
		dim *= k
	}
	if dim == 0 {
		return nil, &ParseError{File: images.Source, Msg: fmt.Sprintf(
			"dimensions %s give samples of no features", dimString(images.Dims))}
	}
	features := make([]float32, images.Len())
	if images.Type == IDXUint8 {
		for i, b := range images.Data {
			features[i] = float32(b) / 255
		}
	} else {
		for i := range features {
			v := images.At(i)
			features[i] = float32(v)
			if math.IsNaN(v) || math.IsInf(float64(features[i]), 0) {
				return nil, &ParseError{File: images.Source, Msg: fmt.Sprintf(
					"element %d (sample %d, feature %d) is %v: want a finite float32", i, i/dim, i%dim, v)}
			}
		}
	}
	raw := make([]int, n)
	for i := range raw {
		raw[i] = int(labels.At(i))
	}
	ys, classes, names := numberInts(raw)
	return &Dataset{
		Features:   features,
		Labels:     ys,
		Dim:        dim,
		Classes:    classes,
		ClassNames: names,
		Source:     images.Source + " + " + labels.Source,
		Format:     FormatIDX,
	}, nil
}

// numberInts maps integer labels to dense classes in increasing order.
func numberInts(raw []int) (labels []int, classes int, names []string) {
	distinct := slices.Clone(raw)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	identity := len(distinct) == 0 || (distinct[0] == 0 && distinct[len(distinct)-1] == len(distinct)-1)
	labels = make([]int, len(raw))
	for i, v := range raw {
		if identity {
			labels[i] = v
		} else {
			labels[i], _ = slices.BinarySearch(distinct, v)
		}
	}
	names = make([]string, len(distinct))
	for c, v := range distinct {
		names[c] = strconv.Itoa(v)
	}
	return labels, len(distinct), names
}

// readUpTo reads up to want bytes, growing its buffer as data arrives so
// that a header declaring a huge size does not allocate it up front. The
// buffer doubles, so what it holds is at least half of what it takes.
func readUpTo(r io.Reader, want int64) ([]byte, error) {
	buf := make([]byte, 0, min(want, 1<<20))
	for int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(want, 2*int64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		k, err := r.Read(buf[len(buf):min(int64(cap(buf)), want)])
		buf = buf[:len(buf)+k]
		if isEOF(err) {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func dimString(dims []int) string {
	parts := make([]string, len(dims))
	for i, k := range dims {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, "×")
}
