package nn

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"colo/dataset"
)

// The tests and benchmarks on real data read Fashion-MNIST's 10,000 test
// images from the shared data directory, two levels above the
// repository's packages, and skip when it is absent.
var fashion struct {
	sync.Once
	x      []float32 // standardised, as PyTorch's peer does
	labels []int32
	err    error
}

// Fashion-MNIST's pixel mean and standard deviation, on the [0, 1] scale.
const fashionMean, fashionStd = 0.2860, 0.3530

var fashionDir = filepath.Join("..", "..", "shared", "data", "fashion-mnist")

func statFashion() (os.FileInfo, error) {
	return os.Stat(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"))
}

func fashionTest(tb testing.TB) (x []float32, labels []int32) {
	tb.Helper()
	dir := fashionDir
	images := filepath.Join(dir, "t10k-images-idx3-ubyte.gz")
	if _, err := statFashion(); err != nil {
		tb.Skipf("Fashion-MNIST is not at %s (%v): skipping the test on real data", dir, err)
	}
	fashion.Do(func() {
		d, err := dataset.Load(images, dataset.LoadOptions{Labels: filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")})
		if err != nil {
			fashion.err = err
			return
		}
		fashion.x = make([]float32, len(d.Features))
		for i, v := range d.Features {
			fashion.x[i] = (v - fashionMean) / fashionStd
		}
		fashion.labels = make([]int32, len(d.Labels))
		for i, l := range d.Labels {
			fashion.labels[i] = int32(l)
		}
	})
	if fashion.err != nil {
		tb.Fatal(fashion.err)
	}
	return fashion.x, fashion.labels
}
