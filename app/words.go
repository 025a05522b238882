package app

import (
	"fmt"

	"colo/dataset"
	"colo/internal/textio"
)

// Words describes the training data for people: its graph's size
// (graph.Graph.Words), or its samples, features and classes, with the
// label column of a CSV file.
func (d *Data) Words() string {
	if d.Graph != nil {
		return d.Graph.Words()
	}
	s := d.Samples
	label := ""
	if s.Format == dataset.FormatCSV {
		label = fmt.Sprintf(", labels from column %d", s.LabelCol)
		if s.LabelName != "" {
			label = fmt.Sprintf(", labels from column %d %q", s.LabelCol, s.LabelName)
		}
	}
	return fmt.Sprintf("%s samples × %d features, %d classes%s", textio.Commas(int64(s.Len())), s.Dim, s.Classes, label)
}
