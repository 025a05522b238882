package dataset

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"colo/internal/decompress"
	"colo/internal/memcap"
)

// checkDataset fails when a reader returned an inconsistent dataset.
func checkDataset(t *testing.T, d *Dataset) {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatalf("reader returned an invalid dataset: %v", err)
	}
	for i, v := range d.Features {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("feature %d is %v", i, v)
		}
	}
}

// The memory of the fuzz targets: the readers' budget, and the cap of the
// address space beyond what the process maps at the start, which a reader
// that kept to its budget never reaches.
const (
	fuzzBudget = 64 << 20
	fuzzCap    = 1 << 30
)

func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes(IDXUint8, []int{3}, []byte{0, 1, 2}))
	f.Add(idxBytes(IDXUint8, []int{2, 2, 2}, []byte{0, 255, 0, 255, 1, 2, 3, 4}))
	f.Add(idxBytes(IDXInt32, []int{1}, []byte{0, 0, 1, 0}))
	f.Add(idxBytes(IDXFloat64, []int{1, 1}, binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN()))))
	f.Add(gzipBytes(f, idxBytes(IDXUint8, []int{2, 1}, []byte{9, 8})))
	f.Add([]byte{0, 0, 8, 2, 0, 0, 0, 9})
	f.Add([]byte{0xff, 0, 8, 1})
	f.Add([]byte{0, 0, 8, 3, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0}) // 64 GiB declared
	// A worker that allocated what a header claims beyond the budget
	// would die of "out of memory" under the cap: a failing input.
	memcap.Cap(f, fuzzCap)
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := openDecompressed(bytes.NewReader(in))
		if err != nil {
			return
		}
		size := int64(-1)
		if !decompress.Compressed(in) {
			size = int64(len(in))
		}
		x, err := ReadIDXBounded(r, "fuzz", fuzzBudget, size)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		want := 1
		for _, k := range x.Dims {
			want *= k
		}
		if x.Len() != want || len(x.Data) != want*ElemSize(x.Type) {
			t.Fatalf("dims %v but %d bytes", x.Dims, len(x.Data))
		}
		// Read as images against a label file of matching length.
		if len(x.Dims) >= 1 && x.Dims[0] <= 1<<16 {
			labels := &IDX{Type: IDXUint8, Dims: []int{x.Dims[0]}, Data: make([]byte, x.Dims[0]), Source: "labels"}
			if d, err := FromIDX(x, labels); err == nil {
				checkDataset(t, d)
			}
			if d, err := FromIDX(labels, x); err == nil {
				checkDataset(t, d)
			}
		}
	})
}

func FuzzReadCSV(f *testing.F) {
	f.Add("1,0.5,2\n0,1,3\n", 0, uint8(0))
	f.Add("y,a,b\n1,0.5,2\n", 0, uint8(0))
	f.Add("0.5,2,cat\n1,3,dog\n", -1, uint8(2))
	f.Add("a;b\n\"1\";2\n", 1, uint8(1))
	f.Add("1,2\n3\n", 0, uint8(0))
	f.Add("", 5, uint8(0))
	f.Add("1"+strings.Repeat(",2", 1<<17)+"\n", 0, uint8(2))
	f.Add("a,Label,b\n1,x,2\n", 0, uint8(4))
	f.Add("p,q\n1,2\n", 0, uint8(5))
	f.Add("\ufefflabel,a\n1,2\n", 0, uint8(4))
	f.Add("1,-1e39\n", 0, uint8(1))
	memcap.Cap(f, fuzzCap)
	f.Fuzz(func(t *testing.T, in string, labelCol int, header uint8) {
		o := CSVOptions{LabelCol: labelCol, Header: Header(header % 3), LabelAuto: header&4 != 0, MaxValues: 1 << 16}
		d, err := ReadCSVBounded(strings.NewReader(in), "fuzz", o, fuzzBudget, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkDataset(t, d)
	})
}

func FuzzReadLibSVM(f *testing.F) {
	f.Add("1 1:0.5 3:2\n-1 2:1\n", int8(-1))
	f.Add("2 0:1 1:2\n5 qid:3 2:3\n", int8(0))
	f.Add("1 3:1 2:1\n", int8(1))
	f.Add("1,2 1:1\n# c\n\n", int8(-1))
	f.Add("1 99999999:1\n", int8(-1))
	memcap.Cap(f, fuzzCap)
	f.Fuzz(func(t *testing.T, in string, base int8) {
		o := LibSVMOptions{IndexBase: int(base%2) - 0, MaxValues: 1 << 16, Memory: fuzzBudget}
		if o.IndexBase < -1 {
			o.IndexBase = -1
		}
		d, err := ReadLibSVM(strings.NewReader(in), "fuzz", o)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkDataset(t, d)
	})
}
