package launch

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the summary of colo node for people, with the lines
// its kind added (Lines).
func (s NodeSummary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (machine %d): joined in %.3f s\n", strings.Join(s.Nodes, " + "), s.Machine, s.StartSeconds)
	for _, l := range s.Lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	in, out := s.Stats.Inner, s.Stats.Inter
	fmt.Fprintf(&b, "  traffic inner-machine %d msgs %s sent, inter-machine %d msgs %s sent, %d msgs %s received\n",
		in.MsgsSent, BytesText(in.BytesSent), out.MsgsSent, BytesText(out.BytesSent), out.MsgsRecv, BytesText(out.BytesRecv))
	if s.Error != "" {
		fmt.Fprintf(&b, "  job failed: %s\n", s.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// BytesText formats a byte count for people: "1.50 MiB".
func BytesText(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// textJoin joins names as a sentence does: "a", "a and b", "a, b and c".
func textJoin(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
