package main

import (
	"bufio"
	"fmt"
	"io"

	"colo/graph"
	"colo/internal/atomicfile"
	"colo/internal/plot"
)

func runConvert(e *env, args []string) error {
	f := newFlags(e, "convert", "colo convert [flags] FILE --to hmetis|libsvm -o OUT",
		"Writes a dataset in another format. hmetis writes the hypergraph whose\n"+
			"vertices are the samples and whose nets are the parameters, for external\n"+
			"partitioners (hMETIS, PaToH, KaHyPar, Zoltan PHG); their partition file\n"+
			"(one part per vertex per line) is then a data part for `colo eval`.\n"+
			"libsvm writes `label id:value ...` with the parameter ids of the input.")
	var df dataFlags
	df.register(f)
	to := f.String("to", "hmetis", "output format: hmetis or libsvm")
	out := f.String("o", "", "output file, or - for standard output (required)")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	var write func(io.Writer, *graph.Graph) error
	switch *to {
	case "hmetis":
		write = graph.WriteHMetis
	case "libsvm":
		write = graph.WriteLibSVM
	default:
		return usageError("--to %q: want hmetis or libsvm", *to)
	}
	if *out == "" {
		return usageError("-o OUT is required")
	}
	if err := checkOutputs(output{"-o", *out, false}); err != nil {
		return err
	}
	g, _, err := df.load(pos[0])
	if err != nil {
		return err
	}
	if err := writeOutput(e, *out, func(w io.Writer) error { return write(w, g) }); err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(e.errOut, "wrote %s (%s): %s\n", *out, *to, g.Words())
	}
	return nil
}

// checkOutputs fails at once, before any work, when one of the outputs
// cannot be written: flag names each, "" or "-" (standard output) is
// skipped. Directories (dir) are checked with atomicfile.CheckDir, files
// with atomicfile.CheckFile; --svg's PNG beside it (writeFigure) too.
func checkOutputs(outs ...output) error {
	for _, o := range outs {
		if o.path == "-" && o.dir {
			// Not a directory named "-", which the user did not mean.
			return usageError("%s -: %s writes a directory of files, not standard output: name the directory", o.flag, o.flag)
		}
		if o.path == "" || o.path == "-" {
			continue
		}
		check := atomicfile.CheckFile
		if o.dir {
			check = atomicfile.CheckDir
		}
		if err := check(o.path); err != nil {
			return fmt.Errorf("%s: %w", o.flag, err)
		}
		if o.flag == "--svg" && atomicfile.Replaces(o.path) {
			if err := check(plot.PNGPath(o.path)); err != nil {
				return fmt.Errorf("%s: %w", o.flag, err)
			}
		}
	}
	return nil
}

// output is a path a command writes, and the flag that named it.
type output struct {
	flag, path string
	dir        bool
}

// isStdout reports whether path names standard output: "-", or a path
// that leads to descriptor 1 (/dev/stdout, /dev/fd/1).
func isStdout(path string) bool {
	fd, ok := atomicfile.Descriptor(path)
	return path == "-" || (ok && fd == 1)
}

// writeOutput writes to path through atomicfile (a regular file replaced
// whole when complete, a device or FIFO written through), or to standard
// output for "-" and the paths that name it.
func writeOutput(e *env, path string, write func(io.Writer) error) error {
	if isStdout(path) {
		bw := bufio.NewWriter(e.stdout())
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return atomicfile.Write(path, write)
}

// writeFigure writes f as SVG to path and as PNG beside it (the same name
// ending in .png), or only the SVG to standard output for "-".
func writeFigure(e *env, path string, f *plot.Figure) error {
	if path == "-" {
		return writeOutput(e, path, f.SVG)
	}
	return f.Save(path)
}
