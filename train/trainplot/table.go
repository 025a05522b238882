package trainplot

import (
	"fmt"
	"io"
	"text/tabwriter"

	"colo/internal/textio"
	"colo/train"
)

// WriteTable writes runs side by side, a column a run and a row a
// measure (the cost model's traffic, the seconds, the bytes, the losses
// and scores the first run has, and with several runs the speed-up and
// traffic against the first), as colo train prints them. runs must not
// be empty.
func WriteTable(w io.Writer, runs []*train.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(r *train.Result) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	row("placement", func(r *train.Result) string { return r.Placement })
	if runs[0].TSum > 0 {
		row("T_max (cost model)", func(r *train.Result) string { return textio.Commas(r.TMax) })
		row("T_sum (cost model)", func(r *train.Result) string { return textio.Commas(r.TSum) })
		if runs[0].Consistency == "bsp" {
			row("R_max (BSP round)", func(r *train.Result) string { return textio.Commas(r.RMax) })
		}
	}
	row("partition s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.PartitionSeconds) })
	row("train s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.TrainSeconds) })
	row("total s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.TotalSeconds) })
	row("passes", func(r *train.Result) string { return fmt.Sprint(r.Passes) })
	if runs[0].BoundRoundSeconds > 0 {
		row("round ms", func(r *train.Result) string { return fmt.Sprintf("%.1f", 1000*r.RoundSeconds) })
		row("round ms, bound", func(r *train.Result) string { return fmt.Sprintf("%.1f", 1000*r.BoundRoundSeconds) })
	}
	row("inter-machine MB", func(r *train.Result) string { return fmt.Sprintf("%.1f", float64(r.BytesInter)/1e6) })
	row("inner-machine MB", func(r *train.Result) string { return fmt.Sprintf("%.1f", float64(r.BytesInner)/1e6) })
	row("final train loss", func(r *train.Result) string { return fmt.Sprintf("%.4f", r.FinalTrainLoss) })
	if runs[0].Accuracy != nil {
		row(runs[0].On+" accuracy %", func(r *train.Result) string { return fmt.Sprintf("%.2f", 100**r.Accuracy) })
	}
	if runs[0].AUC != nil {
		row(runs[0].On+" AUC", func(r *train.Result) string { return fmt.Sprintf("%.4f", *r.AUC) })
	}
	if st := runs[0].Staleness; st != nil && st.Max > 0 {
		row("staleness mean/max", func(r *train.Result) string { return r.Staleness.String() })
	}
	if runs[0].MRR != nil {
		row(runs[0].On+" MRR", func(r *train.Result) string { return fmt.Sprintf("%.4f", *r.MRR) })
	}
	if runs[0].RMSE != nil {
		row(runs[0].On+" RMSE", func(r *train.Result) string { return fmt.Sprintf("%.4f", *r.RMSE) })
	}
	if len(runs) > 1 {
		base := runs[0]
		row("speed-up (total)", func(r *train.Result) string { return fmt.Sprintf("%.2fx", base.TotalSeconds/r.TotalSeconds) })
		row("inter traffic vs first", func(r *train.Result) string {
			return fmt.Sprintf("%.0f%%", 100*float64(r.BytesInter)/float64(max(base.BytesInter, 1)))
		})
	}
	return tw.Flush()
}
