package shard

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the per-shard figures of s and the totals, as colo
// shard prints them: a table (tabwriter), then a line per measure.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	coverage := s.CoverageReference > 0
	fmt.Fprint(tw, "worker\tsize\ttarget\tmin class\tmax class\tmax prop dev\t")
	if coverage {
		fmt.Fprint(tw, "coverage\trandom\t")
	}
	fmt.Fprintln(tw)
	for j, sh := range s.Shards {
		lo, hi := sh.ClassCounts[0], sh.ClassCounts[0]
		for _, c := range sh.ClassCounts {
			lo, hi = min(lo, c), max(hi, c)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%d\t%d\t%.4f\t", j, sh.Size, sh.Target, lo, hi, sh.MaxProportionDeviation)
		if coverage {
			c, b, k := 0.0, 0.0, 0
			for _, pc := range s.PerClass {
				if j < len(pc.Coverage) {
					c += pc.Coverage[j]
					b += pc.BaselineCoverage[j]
					k++
				}
			}
			fmt.Fprintf(tw, "%.4f\t%.4f\t", c/float64(max(k, 1)), b/float64(max(k, 1)))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmax |size - target| %.1f, max |class count - target| %.1f, class-count spread %d, max proportion deviation %.4f\n",
		s.MaxSizeDeviation, s.MaxClassCountDeviation, s.MaxClassCountSpread, s.MaxProportionDeviation)
	fmt.Fprintf(w, "class means: largest distance between two shards %.3f σ\n", s.MaxMeanDistance)
	if coverage {
		fmt.Fprintf(w, "coverage (facility location, %d references per class): %.4f, random shards with the same counts %.4f, smallest gain %+.4f\n",
			s.CoverageReference, s.MeanCoverage, s.MeanBaselineCoverage, s.MinCoverageGain)
	}
	if s.Clusters != nil {
		fmt.Fprintf(w, "distaware: %d PCA dimensions (%.1f%% of the variance), %d k-means iterations, %d clusters, %d broadcast (%d samples)\n",
			s.PCADims, 100*s.PCAExplained, s.KMeansIterations, len(s.Clusters), s.BroadcastClusters, s.BroadcastSamples)
	}
	return nil
}
