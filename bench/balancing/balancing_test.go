package balancing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/app"
	"colo/balance"
	"colo/internal/plot/plottest"
)

// TestRunWritesEveryFile runs a small experiment on synthetic data and
// checks every file, the documented fields and the table's ratios.
func TestRunWritesEveryFile(t *testing.T) {
	var csv strings.Builder
	for i := range 240 {
		c := i % 3
		csv.WriteString(string(rune('0' + c)))
		for j := range 784 {
			if j%97 == c {
				csv.WriteString(",1")
			} else {
				csv.WriteString(",0")
			}
		}
		csv.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := app.DefaultJob("mlp")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train = path
	job.Config.Machines, job.Config.Batch, job.Config.RandomBandwidth = 4, 32, 50e6
	if err := app.SetOptions(&job, map[string]any{"header": "no"}); err != nil {
		t.Fatal(err)
	}
	opened, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	b := balance.DefaultConfig()
	b.Slice, b.Probe = 256, 256
	cfg := Config{Job: job, Schemes: balance.Schemes(), Sizes: Sizes()[:1], Runs: 1, Rounds: 4, Balance: b, Slices: []uint64{128, 1024}}
	res, err := Run(context.Background(), cfg, opened.Data)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 4 || len(res.Table) != 4 || len(res.Granularity) != 3 || res.Eq4 <= 0 || res.Alpha <= 0 || res.PaperEq4 <= 0 {
		t.Fatalf("%d runs, %d rows, %d granularity points, Eq. 4 %v (α %v), with the seed's α %v", len(res.Runs), len(res.Table), len(res.Granularity), res.Eq4, res.Alpha, res.PaperEq4)
	}
	// The last point of the sweep measured α; its slice is Eq. 4's.
	if last := res.Granularity[2]; last.Calibration == nil || last.Slice != last.Calibration.Slice || last.Calibration.Alpha != res.Alpha {
		t.Errorf("the measured point %+v, α %v", last, res.Alpha)
	}
	for _, r := range res.Runs {
		if r.Rounds != 4 || r.ImagesPerMinute <= 0 || r.ASRIT <= 0 || len(r.SRIT) != 4 || r.TrainBytes <= 0 {
			t.Errorf("run %+v", r)
		}
	}
	if res.Table[0].Scheme != balance.Average || res.Table[0].Speedup != 1 || res.Table[3].VsOracle != 1 {
		t.Errorf("table %+v", res.Table)
	}
	dir := t.TempDir()
	if err := WriteDir(dir, res); err != nil {
		t.Fatal(err)
	}
	for _, name := range Files() {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") {
			if _, err := plottest.Texts(b); err != nil {
				t.Errorf("%s is not XML: %v", name, err)
			}
		}
		if strings.HasSuffix(name, ".png") {
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	res.Dataset = "blobs"
	plottest.Check(t, speedFigure(res), "blobs: ", "images per minute", balance.Average, balance.Oracle, res.Table[0].Size)
	plottest.Check(t, sritFigure(res), "single-round iteration time (SRIT)", balance.Average, balance.Oracle)
	plottest.Check(t, granularityFigure(res), fmt.Sprintf("Eq. 4, measured α: %.0f", res.Eq4), fmt.Sprintf("Eq. 4, seed's α: %.0f", res.PaperEq4), "ASRIT (s)")
	var back map[string]any
	b2, _ := os.ReadFile(filepath.Join(dir, "balance.json"))
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"machines", "runs", "table", "granularity", "eq4_slice_keys"} {
		if _, ok := back[field]; !ok {
			t.Errorf("balance.json lacks %q", field)
		}
	}
	cfg.Job.App = "lr"
	if err := cfg.Validate(); err == nil {
		t.Error("an lr job accepted")
	}
}
