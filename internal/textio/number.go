package textio

import (
	"fmt"
	"strconv"
)

// ParseIndex parses b as a non-negative decimal integer written the one
// way colo writes it: ASCII digits only, no sign, no white space, no
// leading zero (except "0" itself), at most max. It reports false for
// anything else, so that "+3", "03", "3.0" and " 3" are refused rather
// than read as 3.
func ParseIndex(b []byte, max int) (int, bool) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}

// Commas formats n with thousands separators.
func Commas(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
