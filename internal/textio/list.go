package textio

import (
	"fmt"
	"strconv"
	"strings"
)

// SplitList splits a comma-separated list, trimming the items' spaces
// and leaving out empty ones: "a, b,,c" is [a b c], "" is none.
func SplitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ParseInts reads a comma-separated list of positive integers
// (SplitList); the error quotes the list.
func ParseInts(list string) ([]int, error) {
	var out []int
	for _, s := range SplitList(list) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", list)
		}
		out = append(out, n)
	}
	return out, nil
}
