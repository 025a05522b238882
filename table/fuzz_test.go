package table

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// fuzzOptions bound what one input may take, as a caller with a memory
// budget does.
func fuzzOptions() Options {
	o := DefaultOptions()
	o.Memory = 1 << 20
	o.BatchRows = 7
	return o
}

// drain reads every batch of a table read from data as name; it must
// end in io.EOF or an *Error, never a panic.
func drain(t *testing.T, data []byte, name string, cols []string) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), name, cols, fuzzOptions())
	if err != nil {
		return
	}
	for {
		b, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		for _, c := range b.Cols {
			if c.Len() != b.Rows {
				t.Fatalf("column %s has %d values for %d rows", c.Name, c.Len(), b.Rows)
			}
		}
	}
}

func FuzzParquet(f *testing.F) {
	path := writeParquet(f, f.TempDir(), flights(40), 16, parquet.Compression(&parquet.Snappy))
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-8])
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		drain(t, data, "f.parquet", nil)
		drain(t, data, "f.parquet", []string{"origin", "delay"})
	})
}

func FuzzText(f *testing.F) {
	f.Add([]byte("a,b\n1,2\n\"x\",\n"), false)
	f.Add([]byte(`{"a":1,"b":"x"}`+"\n"+`{"b":null}`), true)
	f.Fuzz(func(t *testing.T, data []byte, jsonl bool) {
		name := "f.csv"
		if jsonl {
			name = "f.jsonl"
		}
		drain(t, data, name, nil)
	})
}
