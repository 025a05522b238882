package train

import (
	"os"
	"path/filepath"
)

// Abs returns j with its files named by absolute paths: the training and
// test data, the checkpoint directories, and the placement when it is a
// directory (not a partitioner's name), so that a job written to a file
// runs the same from any working directory.
func (j Job) Abs() (Job, error) {
	var err error
	for _, f := range []*string{&j.Data.Train, &j.Data.Test, &j.Config.Checkpoint.Dir, &j.Config.Checkpoint.Resume} {
		if *f != "" {
			if *f, err = filepath.Abs(*f); err != nil {
				return j, err
			}
		}
	}
	if st, err := os.Stat(j.Placement); err == nil && st.IsDir() {
		if j.Placement, err = filepath.Abs(j.Placement); err != nil {
			return j, err
		}
	}
	return j, nil
}
