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
	if s.Smoke != nil {
		fmt.Fprintf(&b, "  pushed %d keys in %.3f s: %.2fM keys/s", s.Smoke.KeysPushed, s.Smoke.Seconds, s.Smoke.KeysPerSec/1e6)
		if s.Smoke.Checked {
			b.WriteString("; every value is the exact sum")
		}
		b.WriteString("\n")
	}
	in, out := s.Stats.Inner, s.Stats.Inter
	fmt.Fprintf(&b, "  traffic inner-machine %d msgs %s sent, inter-machine %d msgs %s sent, %d msgs %s received\n",
		in.MsgsSent, bytesText(in.BytesSent), out.MsgsSent, bytesText(out.BytesSent), out.MsgsRecv, bytesText(out.BytesRecv))
	if s.Error != "" {
		fmt.Fprintf(&b, "  job failed: %s\n", s.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the summary of colo launch for people.
func (s *SmokeSummary) WriteText(w io.Writer) error {
	var b strings.Builder
	shape := fmt.Sprintf("%d machines", s.Machines)
	if s.Machines == 0 {
		shape = fmt.Sprintf("%d servers, %d workers", s.Servers, s.Workers)
	}
	fmt.Fprintf(&b, "cluster of %s (%s) on loopback: all nodes running %.3f s after launch\n", shape, s.Consistency, s.StartSeconds)
	fmt.Fprintf(&b, "smoke job: %d keys pushed in %.3f s: %.2fM keys/s", s.KeysPushed, s.Seconds, s.KeysPerSec/1e6)
	if s.Checked {
		b.WriteString("; every value is the exact sum")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "traffic: inner-machine %d messages, %s; inter-machine %d messages, %s (sent)\n",
		s.Inner.MsgsSent, bytesText(s.Inner.BytesSent), s.Inter.MsgsSent, bytesText(s.Inter.BytesSent))
	for i, r := range s.Restarts {
		fmt.Fprintf(&b, "restart %d: after %s (%.3f s into that run); the new cluster running %.3f s later\n", i+1, r.Error, r.Seconds, r.RestartSeconds)
	}
	fmt.Fprintf(&b, "total %.3f s\n", s.TotalSeconds)
	_, err := io.WriteString(w, b.String())
	return err
}

// bytesText formats a byte count for people: "1.50 MiB".
func bytesText(b uint64) string {
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
