package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"colo/app"
	"colo/internal/tempdir"
	"colo/train"
)

// study is what the dense-model experiments of colo bench (sharding,
// balance) share: the training and data flags of colo train with the
// experiment's defaults, -o DIR, and the end of a run: the directory, its
// JSON stamped with the version and options, --json, the table.
type study struct {
	t   trainFlags
	df  dataFlags
	out *string
}

// newStudy registers the flags on f, with defaults (flag name → value)
// shown by -h.
func newStudy(f *cmdFlags, defaults map[string]string) *study {
	s := &study{}
	s.t.register(f)
	s.df.register(f)
	for name, v := range defaults {
		f.Lookup(name).Value.Set(v)
		f.Lookup(name).DefValue = v
	}
	s.out = f.String("o", "", "output directory (required)")
	return s
}

// job parses args (one DATA argument), checks the outputs before any
// work and returns the data file and the job of the flags.
func (s *study) job(f *cmdFlags, args []string) (string, train.Job, error) {
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return "", train.Job{}, err
	}
	if *s.out == "" {
		return "", train.Job{}, usageError("-o DIR is required")
	}
	if err := checkOutputs(output{"-o", *s.out, true}, output{"--json", s.t.json.Path, false}); err != nil {
		return "", train.Job{}, err
	}
	job, err := s.t.job(pos[0], s.df)
	return pos[0], job, err
}

// run opens job's data, says what runs (what follows the data's
// description), runs the experiment until it ends or a signal stops it,
// and writes its result res: writeDir into -o, whose jsonFile is stamped,
// --json, and the table on standard output.
func (s *study) run(e *env, data string, job train.Job, what string, experiment func(ctx context.Context, d *app.Data) (res any, err error),
	writeDir func(dir string) error, jsonFile string, table func(io.Writer) error, files []string) error {
	opened, err := app.Open(job)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "%s: %s; %s\n", data, opened.Data.Words(), what)
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	res, err := experiment(ctx, opened.Data)
	if err != nil {
		return err
	}
	if err := writeDir(*s.out); err != nil {
		return err
	}
	if err := stampFile(e, filepath.Join(*s.out, jsonFile)); err != nil {
		return err
	}
	if p := s.t.json.Path; p != "" {
		if err := writeJSON(e, p, res); err != nil {
			return err
		}
	}
	if err := table(e.out); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nwritten to %s (%s)\n", *s.out, strings.Join(files, ", "))
	return nil
}
