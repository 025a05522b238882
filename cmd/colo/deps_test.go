package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoTestingInBinary checks that the colo binary does not link Go's
// testing package: no package it depends on may import "testing" (test
// helpers such as transport/transporttest belong to tests only). On
// failure it names the packages that import it.
func TestNoTestingInBinary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "colo/cmd/colo").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var importers []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 && slices.Contains(fields[1:], "testing") {
			importers = append(importers, fields[0])
		}
	}
	if len(importers) > 0 {
		t.Errorf("colo links package testing, imported by %s", strings.Join(importers, ", "))
	}
}
