package transport_test

import (
	"fmt"
	"strings"

	"colo/transport"
)

// Three machines on 1 Gbit/s links, with a slow link between 0 and 2.
func ExampleParseBandwidth() {
	const file = `
# from\to  0        1        2
           0        1gbit    100mbit
           1gbit    0        1gbit
           100mbit  1gbit    0
`
	bw, err := transport.ParseBandwidth(strings.NewReader(file), "links.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d machines, 0→2 at %.1f MB/s, 0→1 at %.0f MB/s\n", bw.K, bw.Rate(0, 2)/1e6, bw.Rate(0, 1)/1e6)

	_, err = transport.ParseBandwidth(strings.NewReader("0 1gbit\n1gbit 10furlongs\n"), "bad.txt")
	fmt.Println(err)
	// Output:
	// 3 machines, 0→2 at 12.5 MB/s, 0→1 at 125 MB/s
	// bad.txt:2: field 2: rate "10furlongs" has unknown unit "furlongs" (bit, kbit, mbit, gbit, tbit, kibit, …, bps, kbps, …)
}
