package placement

import (
	"fmt"
	"io"
	"text/tabwriter"

	"colo/internal/textio"
)

// WriteTable writes the per-machine costs and the totals of s with the
// improvement over random placement, as colo partition and colo eval
// print them: two tables (tabwriter) and the notes under them.
func (s *Summary) WriteTable(w io.Writer) error {
	c := s.Cost
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "machine\tsamples\tparams\tmemory\tworker\tserver\ttraffic\tBSP round\t\n")
	for i := 0; i < c.K; i++ {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i, textio.Commas(c.Samples[i]), textio.Commas(c.Params[i]),
			textio.Commas(c.Memory[i]), textio.Commas(c.Worker[i]), textio.Commas(c.Server[i]), textio.Commas(c.Traffic[i]), textio.Commas(c.Round[i]))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "metric\tvalue\trandom\timprovement\t\n")
	row := func(name string, v int64, r float64, imp *float64) {
		is := "-"
		if imp != nil {
			is = fmt.Sprintf("%+.1f%%", *imp)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, textio.Commas(v), textio.Commas(int64(r+0.5)), is)
	}
	row("M_max", c.MMax, s.Random.MMax, s.Improvement.MMax)
	row("T_max", c.TMax, s.Random.TMax, s.Improvement.TMax)
	row("T_sum", c.TSum, s.Random.TSum, s.Improvement.TSum)
	row("R_max (BSP)", c.RMax, s.Random.RMax, s.Improvement.RMax)
	row("max|U_i|", c.MaxSamples, s.Random.MaxSamples, nil)
	row("objective", c.Objective, s.Random.Objective, s.Improvement.Objective)
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Theta > 0 {
		fmt.Fprintf(w, "\n%d of %d machines over the memory bound θ = %s\n", c.OverTheta, c.K, textio.Commas(c.Theta))
	}
	fmt.Fprintf(w, "\ntraffic in parameters per round; BSP round R_i = max(T_i, 2·worker_i), what a round of\nsynchronous training keeps the link busy; improvement = (random - x) / x, random = mean of %d uniform placements\n", BaselineSeeds)
	return nil
}
