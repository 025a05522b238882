// Package ztest compresses test data in each format that package
// decompress reads, for the tests of every loader.
package ztest

import (
	"bytes"
	"compress/gzip"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Compressors returns a compressor for each format decompress.NewReader
// reads, by name. bzip2 has no
// writer in Go; its test data is internal/decompress/testdata/small.svm.bz2, made with the
// bzip2 command.
func Compressors() map[string]func([]byte) ([]byte, error) {
	return map[string]func([]byte) ([]byte, error){
		"gzip": func(p []byte) ([]byte, error) {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			if _, err := w.Write(p); err != nil {
				return nil, err
			}
			err := w.Close()
			return buf.Bytes(), err
		},
		"xz": func(p []byte) ([]byte, error) {
			var buf bytes.Buffer
			// A small dictionary keeps the writer cheap; the reader does
			// not care.
			w, err := xz.WriterConfig{DictCap: 1 << 16}.NewWriter(&buf)
			if err != nil {
				return nil, err
			}
			if _, err := w.Write(p); err != nil {
				return nil, err
			}
			err = w.Close()
			return buf.Bytes(), err
		},
		"zstd": func(p []byte) ([]byte, error) {
			w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil, err
			}
			defer w.Close()
			return w.EncodeAll(p, nil), nil
		},
	}
}
