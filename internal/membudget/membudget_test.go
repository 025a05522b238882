package membudget

import (
	"math"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"auto", Auto, true}, {"", Auto, true}, {"AUTO", Auto, true},
		{"off", Off, true}, {"none", Off, true},
		{"512MiB", 512 << 20, true}, {"512m", 512 << 20, true}, {"4GB", 4e9, true}, {"1.5GiB", 3 << 29, true},
		{"100", 100, true}, {"1K", 1024, true},
		{"0", 0, false}, {"0.1", 0, false}, {"-1G", 0, false}, {"1X", 0, false}, {"G", 0, false},
		{"99999999999TiB", 0, false},
	} {
		got, err := Parse(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check(1000, "f", 3, "x", 1000); err != nil {
		t.Errorf("need = budget: %v", err)
	}
	if err := Check(Off, "f", 3, "x", math.MaxInt64); err != nil {
		t.Errorf("budget off: %v", err)
	}
	err := Check(1<<20, "data.csv", 7, "2 × 1000000 float32 features", 8e6)
	e, ok := err.(*Error)
	if !ok || e.Need != 8e6 || e.Limit != 1<<20 || e.Line != 7 || !Is(err) {
		t.Fatalf("Check over the budget = %#v", err)
	}
	for _, want := range []string{"data.csv:7: ", "2 × 1000000 float32 features", "7.6 MiB", "1.0 MiB", Flag} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if err := Check(10, "f", 0, "x", 11); !strings.HasPrefix(err.Error(), "f: x need") {
		t.Errorf("no line: %q", err)
	}
}

func TestMaxLine(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  int
	}{{1 << 10, MinLine}, {16 << 20, MinLine}, {160 << 20, 10 << 20}, {1 << 40, MaxLineCap}, {math.MaxInt64, MaxLineCap}} {
		if got := MaxLine(c.limit); got != c.want {
			t.Errorf("MaxLine(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestDefaultFollowsAddressSpaceLimit lowers the process's address-space
// limit to a value well above what the test uses and checks that the
// default budget follows it; the limit is restored after.
func TestDefaultFollowsAddressSpaceLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	const cap = 1 << 40 // 1 TiB of address space: no allocation of the test notices it
	if old.Cur < cap {
		t.Skipf("address space already limited to %d bytes", old.Cur)
	}
	lim := old
	lim.Cur = cap
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_AS, &old)
	if a := Available(); a > cap || a <= 0 {
		t.Errorf("Available() = %d under an address-space limit of %d", a, int64(cap))
	}
	if d := Default(); d > cap/4*3 || d <= 0 {
		t.Errorf("Default() = %d under an address-space limit of %d: want at most three quarters of it", d, int64(cap))
	}
	if Resolve(Auto) != Default() && Resolve(Auto) > cap {
		t.Errorf("Resolve(Auto) = %d", Resolve(Auto))
	}
	if Resolve(Off) != math.MaxInt64 || Resolve(12) != 12 {
		t.Errorf("Resolve(Off) = %d, Resolve(12) = %d", Resolve(Off), Resolve(12))
	}
}

func TestDefaultBelowAvailable(t *testing.T) {
	avail := meminfoAvailable()
	if avail == 0 {
		t.Skip("no /proc/meminfo")
	}
	// Memory comes and goes on a shared machine: compare with a margin.
	if d := Default(); d > avail {
		t.Errorf("Default() = %d, more than MemAvailable %d", d, avail)
	}
}

// TestParseSizeErrors: the errors name what was parsed and the text, as
// Parse and partition/ooc.ParseBytes give them.
func TestParseSizeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"MiB":          `size "MiB": want a number`,
		"12 parsec":    `size "12 parsec": unknown unit " parsec": want B, KiB`,
		"1e30 TB":      `size "1e30 TB": unknown unit "e30 TB"`,
		"9e9 TiB":      `size "9e9 TiB": unknown unit "e9 TiB"`,
		"99999999 TiB": `size "99999999 TiB": too large`,
	} {
		if _, err := ParseSize(in, "size", "a number"); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseSize(%q): %v, want %s…", in, err, want)
		}
	}
	if _, err := Parse("0.5"); err == nil || err.Error() != `memory budget "0.5": want at least one byte, auto or off` {
		t.Errorf("Parse(0.5): %v", err)
	}
}
