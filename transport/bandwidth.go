package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// Bandwidth is a k×k matrix of link rates in bytes per second, row i for
// traffic sent by machine i, column j for traffic received by machine j; 0
// means unlimited. It emulates heterogeneous networks with token buckets.
type Bandwidth struct {
	K     int       `json:"k"`
	Rates []float64 `json:"rates"` // row-major, K×K
}

// Rate returns the rate from machine i to machine j in bytes per second,
// 0 for unlimited. It panics if i or j is out of range.
func (b *Bandwidth) Rate(i, j int) float64 { return b.Rates[i*b.K+j] }

// rateUnit returns the bytes per second of one unit of a rate. The names
// are those of tc(8): bit, kbit, … are bits per second (decimal prefixes),
// kibit, … bits per second with binary prefixes, and bps, kbps, … bytes
// per second.
func rateUnit(name string) (float64, bool) {
	switch name {
	case "bit":
		return 1.0 / 8, true
	case "kbit":
		return 1e3 / 8, true
	case "mbit":
		return 1e6 / 8, true
	case "gbit":
		return 1e9 / 8, true
	case "tbit":
		return 1e12 / 8, true
	case "kibit":
		return 1 << 7, true
	case "mibit":
		return 1 << 17, true
	case "gibit":
		return 1 << 27, true
	case "tibit":
		return 1 << 37, true
	case "bps":
		return 1, true
	case "kbps":
		return 1e3, true
	case "mbps":
		return 1e6, true
	case "gbps":
		return 1e9, true
	case "tbps":
		return 1e12, true
	}
	return 0, false
}

// MinRate returns the smaller of two rates in bytes per second, where 0
// means unlimited.
func MinRate(a, b float64) float64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// RateUnits says, for a flag's help, how a rate is written: in bits a
// second (mbit), or in bytes (mbps: tc's unit, not the megabits a second
// it names elsewhere). TestRateUnits parses its examples.
const RateUnits = "bits a second such as 100mbit or 1gbit (tc's units: mbps is megabytes a second, 100mbps = 800mbit; 0 or unlimited, without a unit: no limit)"

// ParseRate parses a rate such as "100mbit", "1.5gbit", "800kbps" or "0"
// (unlimited; also "inf", "-" and "unlimited") and returns bytes per
// second. Units are those of tc(8), case-insensitive: bit kbit mbit gbit
// tbit (bits/s), kibit mibit gibit tibit (binary), bps kbps mbps gbps tbps
// (bytes/s). A number other than 0 needs a unit, and 0 takes none: a
// zero with a unit ("0mbit") is refused, a rate that no job could run on
// rather than no limit, most likely a slip for another number. The rate is the number
// as written times the unit, rounded to the nearest float64 once, so
// that every spelling of one rate gives the same value (0.1gbit,
// 100mbit, 12.5mbps).
func ParseRate(s string) (float64, error) {
	ls := strings.ToLower(s)
	switch ls {
	case "0", "inf", "-", "unlimited":
		return 0, nil
	}
	i := strings.IndexFunc(ls, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i == 0 {
		return 0, fmt.Errorf("rate %q does not start with a number", s)
	}
	if i < 0 {
		if v, err := strconv.ParseFloat(ls, 64); err == nil && v == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("rate %q has no unit (bit, kbit, mbit, gbit, bps, …)", s)
	}
	unit, ok := rateUnit(ls[i:])
	if !ok {
		return 0, fmt.Errorf("rate %q has unknown unit %q (bit, kbit, mbit, gbit, tbit, kibit, …, bps, kbps, …)", s, s[i:])
	}
	v, err := strconv.ParseFloat(ls[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q: bad number %q", s, s[:i])
	}
	r := v * unit
	if strings.Contains(ls[:i], ".") || v >= 1<<53 {
		// The number as written times the unit, rounded once, so that
		// one rate in other units is one value (1.001mbit, 1001kbit):
		// v, rounded already, times unit could round again the other way.
		if q, ok := new(big.Rat).SetString(ls[:i]); ok {
			r, _ = q.Mul(q, new(big.Rat).SetFloat64(unit)).Float64()
		}
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, fmt.Errorf("rate %q is out of range", s)
	}
	if r == 0 {
		return 0, fmt.Errorf("rate %q is zero, a link that carries nothing: for no limit write 0 or unlimited, without a unit", s)
	}
	if r < 1 {
		return 0, fmt.Errorf("rate %q is below 1 byte per second", s)
	}
	return r, nil
}

// FormatRate writes a rate in bytes per second so that ParseRate reads it
// back exactly: "0" for unlimited, otherwise the value in bps.
func FormatRate(bytesPerSec float64) string {
	if bytesPerSec == 0 {
		return "0"
	}
	return strconv.FormatFloat(bytesPerSec, 'f', -1, 64) + "bps"
}

// maxMachines bounds k in a bandwidth file.
const maxMachines = 4096

// ParseBandwidth reads a bandwidth matrix: k lines of k rates separated by
// spaces or tabs, row i for the links from machine i. Blank lines and
// everything after '#' are ignored; the diagonal (a machine to itself) is
// read but not used by the transports. For example, three machines on
// 1 Gbit/s links with a slow 100 Mbit/s link between 0 and 2:
//
//	# from\to  0        1        2
//	           0        1gbit    100mbit
//	           1gbit    0        1gbit
//	           100mbit  1gbit    0
//
// Errors name the source, the line and the field.
func ParseBandwidth(r io.Reader, name string) (*Bandwidth, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	b := &Bandwidth{}
	line, rows := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if b.K == 0 {
			if len(fields) > maxMachines {
				return nil, fmt.Errorf("%s:%d: %d columns, at most %d machines", name, line, len(fields), maxMachines)
			}
			b.K = len(fields)
			b.Rates = make([]float64, 0, b.K*b.K)
		}
		if rows == b.K {
			return nil, fmt.Errorf("%s:%d: more than %d rows for %d columns", name, line, b.K, b.K)
		}
		if len(fields) != b.K {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d like the first row", name, line, len(fields), b.K)
		}
		for j, f := range fields {
			v, err := ParseRate(f)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: field %d: %w", name, line, j+1, err)
			}
			b.Rates = append(b.Rates, v)
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line too long", name, line+1)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if b.K == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	if rows != b.K {
		return nil, fmt.Errorf("%s:%d: %d rows for %d columns", name, line, rows, b.K)
	}
	return b, nil
}

// Format writes b in the format ParseBandwidth reads, exactly.
func (b *Bandwidth) Format(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range b.K {
		for j := range b.K {
			if j > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(FormatRate(b.Rate(i, j)))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadBandwidthFile reads the bandwidth matrix of a file (ParseBandwidth).
func ReadBandwidthFile(path string) (*Bandwidth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseBandwidth(f, path)
}

// RateWords writes a rate in bytes per second as bits per second for
// people: "100 Mbit/s".
func RateWords(bytesPerSec float64) string {
	bits := 8 * bytesPerSec
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bits >= u.scale {
			return fmt.Sprintf("%.4g %s", bits/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%.4g bit/s", bits)
}

// RandomRates returns the rates in bytes per second of k machines'
// network interfaces in period epoch of a changing network: each drawn
// uniformly from [max/10, max] by a generator seeded with seed and epoch,
// so that every process of a cluster draws the same rates for the same
// period. (Seed 002 draws each node's limit below 220 Mbit/s at random
// and draws again every 300 s.)
func RandomRates(k int, max float64, seed uint64, epoch int) []float64 {
	rng := rand.New(rand.NewPCG(seed^0x62616e64, uint64(epoch)))
	r := make([]float64, k)
	for i := range r {
		r[i] = max * (0.1 + 0.9*rng.Float64())
	}
	return r
}
