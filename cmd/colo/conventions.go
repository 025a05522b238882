package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"colo/internal/cli"
)

// The command-line conventions every colo command follows are those of
// package internal/cli: --json[=FILE], the run record heading every JSON
// document, -o - for standard output, aliases of older spellings, and a
// "did you mean" for a mistyped command or flag. This file connects them
// to the command's env: where the JSON goes and what heads it.

// writeJSON writes v, headed by the run record of the command's flags, to
// path ("-": standard output).
func writeJSON(e *env, path string, v any) error {
	b, err := e.stamp(v)
	if err != nil {
		return err
	}
	return writeOutput(e, path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeJSONLine is writeJSON on one line, for outputs read as JSON Lines
// (the nodes of one mpirun share its standard output).
func writeJSONLine(e *env, path string, v any) error {
	b, err := e.stamp(v)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return err
	}
	line.WriteByte('\n')
	return writeOutput(e, path, func(w io.Writer) error {
		_, err := w.Write(line.Bytes())
		return err
	})
}

// stamp is cli.Stamp with the record of the command's parsed flags.
func (e *env) stamp(v any) ([]byte, error) {
	var rec cli.Record
	if e.flags != nil {
		rec = e.flags.Record()
	} else {
		rec = cli.Record{Build: cli.ReadBuild(), Args: []string{}, Options: map[string]string{}}
	}
	return cli.Stamp(rec, v)
}

// routeJSON sends the human output to standard error when the JSON goes
// to standard output.
func (f *cmdFlags) routeJSON() {
	e := f.e
	if f.JSON != nil && isStdout(f.JSON.Path) && e.json == nil {
		e.json, e.out = e.out, e.errOut
	}
}

// unrouteJSON undoes routeJSON, for a command that writes no JSON after
// all.
func (f *cmdFlags) unrouteJSON() {
	if e := f.e; e.json != nil {
		e.out, e.json = e.json, nil
	}
}

// stampFile heads the JSON document a library wrote at path with the run
// record, as writeJSON does for the command's own.
func stampFile(e *env, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s: not JSON", path)
	}
	return writeJSON(e, path, json.RawMessage(b))
}
