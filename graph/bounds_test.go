package graph

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"colo/internal/membudget"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestReadersRefuseBeyondTheBudget: every in-memory reader refuses a
// file whose graph would need more than the budget, naming the file, a
// line of it and both figures, and without allocating much beyond the
// budget; the same file loads under a budget it fits.
func TestReadersRefuseBeyondTheBudget(t *testing.T) {
	var libsvm, snap, criteo, ratings strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&libsvm, "%d %d:1 %d:0.5 %d:2\n", i%2, i%100+1, i%1000+101, i%7+1200)
		fmt.Fprintf(&snap, "%d %d\n", i, (i*7919)%40000)
		fmt.Fprintf(&criteo, "%d\t%d\t\t\t\t\t\t\t\t\t\t\t\t\tc%d\n", i%2, i%50, i%300)
		fmt.Fprintf(&ratings, "%d %d %d\n", i, i%977, 1+i%5)
	}
	const budget = 1 << 20 // well below each file's need
	for _, c := range []struct {
		format Format
		text   string
	}{
		{FormatLibSVM, libsvm.String()}, {FormatSNAP, snap.String()},
		{FormatCriteo, criteo.String()}, {FormatRatings, ratings.String()},
	} {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", c.format, workers), func(t *testing.T) {
				opt := DefaultLoadOptions()
				opt.Format, opt.Memory = c.format, budget
				var err error
				a := allocated(func() { _, err = readWith(c.text, opt, workers) })
				me, ok := errors.AsType[*membudget.Error](err)
				if !ok {
					t.Fatalf("under a budget of %d: %v", budget, err)
				}
				lines := strings.Count(c.text, "\n")
				if me.File != "f" || me.Line < 1 || me.Line > lines || me.Limit != budget || me.Need <= budget {
					t.Fatalf("error %+v", me)
				}
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("f:%d: ", me.Line)) {
					t.Errorf("%v does not start with the file and line", err)
				}
				// The chunks in flight and the buffers: a few MiB.
				if a > 48<<20 {
					t.Errorf("refusing allocated %d bytes", a)
				}
				opt.Memory = 1 << 30
				if _, err := readWith(c.text, opt, workers); err != nil {
					t.Errorf("under a budget of 1 GiB: %v", err)
				}
			})
		}
	}
}

// readWith reads text in opt.Format on workers goroutines.
func readWith(text string, opt LoadOptions, workers int) (*Graph, error) {
	r := strings.NewReader(text)
	switch opt.Format {
	case FormatLibSVM:
		return readLibSVM(r, "f", opt, workers, 64<<10, -1)
	case FormatSNAP:
		return readSNAP(r, "f", false, opt, workers, 64<<10, false)
	case FormatCriteo:
		return readCriteo(r, "f", opt, workers, 64<<10)
	}
	return readRatings(r, "f", opt)
}

// TestLongLine: a line longer than the budget's line limit is refused at
// its line, by every reader, before it is assembled whole.
func TestLongLine(t *testing.T) {
	const budget = 16 << 20 // MaxLine: 1 MiB
	long := "1 " + strings.Repeat("7:1 ", 1<<20) + "\n"
	snapLong := strings.Repeat(" ", 3<<20) + "1 2\n"
	for _, c := range []struct {
		format Format
		text   string
	}{
		{FormatLibSVM, "1 1:1\n0 2:1\n" + long}, {FormatSNAP, "1 2\n2 3\n" + snapLong},
		{FormatCriteo, "1\t2\n0\t3\n" + long}, {FormatRatings, "1 2 3\n2 3 4\n" + snapLong},
	} {
		for _, workers := range []int{1, 3} {
			opt := DefaultLoadOptions()
			opt.Format, opt.Memory = c.format, budget
			var err error
			a := allocated(func() { _, err = readWith(c.text, opt, workers) })
			if pe, ok := errors.AsType[*ParseError](err); !ok || pe.Line != 3 || !strings.Contains(pe.Msg, "line longer than 1048576 bytes") {
				t.Errorf("%s on %d: %v", c.format, workers, err)
			}
			if a > 24<<20 {
				t.Errorf("%s on %d: refusing a line of %d bytes allocated %d", c.format, workers, len(c.text), a)
			}
		}
	}
	// Through Load: the line limit of the budget.
	opt := DefaultLoadOptions()
	opt.Memory = budget
	if _, err := Read(strings.NewReader(long), "g.svm", opt); err == nil || !strings.HasPrefix(err.Error(), "g.svm:1: line longer") {
		t.Errorf("Read: %v", err)
	}
	opt.Memory = membudget.Off
	if _, err := Read(strings.NewReader("1 1:1\n"+long), "g.svm", opt); err == nil || !strings.Contains(err.Error(), "occurs twice") {
		t.Errorf("a line of 4 MiB under no budget: %v", err)
	}
}
