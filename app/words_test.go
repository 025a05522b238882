package app_test

import (
	"testing"

	"colo/app"
	"colo/dataset"
)

func TestDataWords(t *testing.T) {
	s := &dataset.Dataset{Labels: make([]int, 1500), Dim: 4, Classes: 3}
	d := &app.Data{Samples: s}
	if got, want := d.Words(), "1,500 samples × 4 features, 3 classes"; got != want {
		t.Errorf("Words() = %q, want %q", got, want)
	}
	s.Format, s.LabelCol = dataset.FormatCSV, 2
	if got, want := d.Words(), "1,500 samples × 4 features, 3 classes, labels from column 2"; got != want {
		t.Errorf("Words() = %q, want %q", got, want)
	}
	s.LabelName = "y"
	if got, want := d.Words(), `1,500 samples × 4 features, 3 classes, labels from column 2 "y"`; got != want {
		t.Errorf("Words() = %q, want %q", got, want)
	}
}
