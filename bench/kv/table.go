package kv

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the records as colo bench kv prints them: a row a
// record, with its share of the plain TCP reference.
func WriteTable(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\tservers×workers\top\tkeys/s\tMB/s\tp50 µs\tp99 µs\trequests\tplain MB/s\tof plain\t\n")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%d×%d\t%s\t%.1fM\t%.0f\t%.0f\t%.0f\t%d\t%.0f\t%.0f%%\t\n",
			r.Mode, r.Servers, r.Workers, r.Op, r.KeysPerS/1e6, r.MBPerS, r.P50us, r.P99us, r.Requests, r.PlainMBPerS, 100*r.MBPerS/r.PlainMBPerS)
	}
	return tw.Flush()
}
