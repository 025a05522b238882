package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"colo/features"
	"colo/partition/ooc"
)

// flightRow is a row of the Parquet table the tests write.
type flightRow struct {
	Date   time.Time `parquet:"date,timestamp(microsecond)"`
	Delay  int64     `parquet:"delay"`
	Dist   int64     `parquet:"distance"`
	Origin string    `parquet:"origin"`
	Dest   string    `parquet:"destination"`
}

// flightTable writes n flights whose delay depends on the origin and the
// hour to a Parquet file (row groups of 100 rows) and returns its path.
func flightTable(t *testing.T, n int) string {
	t.Helper()
	airports := []string{"SEA", "SFO", "LAX", "ORD", "JFK", "ATL", "DEN", "BOS"}
	rows := make([]flightRow, n)
	for i := range rows {
		o, d := i%8, (i*3+1)%8
		date := time.Date(2001, time.Month(1+i*6/n), 1+i%28, i%24, 0, 0, 0, time.UTC)
		delay := int64(-10 + 6*o + i%24 + (i*7919)%11)
		rows[i] = flightRow{date, delay, int64(100 * (1 + (o+d)%5)), airports[o], airports[d]}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[flightRow](&buf, parquet.MaxRowsPerRowGroup(100), parquet.Compression(&parquet.Snappy))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flights.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const flightSpec = "delay > 15 ~ origin + destination + origin*destination + hour(date) + weekday(date) + quantile(distance, 4); test: date >= 2001-06-01"

func TestTableCommands(t *testing.T) {
	data := flightTable(t, 600)
	// 500 training rows (January to May), 100 test rows (June).
	code, out, errOut := colo(t, "stats", "--spec", flightSpec, "--json", data)
	if code != 0 {
		t.Fatalf("stats exit %d: %s", code, errOut)
	}
	var st struct {
		Samples int    `json:"samples"`
		Edges   int64  `json:"edges"`
		Format  string `json:"format"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Samples != 500 || st.Edges != 6*500 || st.Format != "table" {
		t.Fatalf("stats --json = %.300s: %+v, %v", out, st, err)
	}
	if code, _, errOut := colo(t, "stats", data); code == 0 || !strings.Contains(errOut, "--spec") {
		t.Fatalf("stats of a Parquet file without --spec: exit %d, %s", code, errOut)
	}
	if code, _, errOut := colo(t, "stats", "--spec", "delay > 15 ~ carrier", data); code == 0 || !strings.Contains(errOut, `column "carrier": no such column`) {
		t.Fatalf("an unknown column: exit %d, %s", code, errOut)
	}

	if code, _, errOut := colo(t, "stats", "--spec", flightSpec, "--memory-budget", "4KiB", data); code == 0 || !strings.Contains(errOut, "row group 0: column") || !strings.Contains(errOut, "beyond the memory budget") {
		t.Fatalf("a row group larger than the memory budget: exit %d, %s", code, errOut)
	}
	dir := filepath.Join(t.TempDir(), "p")
	if code, _, errOut := colo(t, "partition", "-k", "2", "--spec", flightSpec, data, "-o", dir); code != 0 {
		t.Fatalf("partition exit %d: %s", code, errOut)
	}
	saved, err := features.Load(dir)
	if err != nil || saved == nil || saved.Rows != 500 {
		t.Fatalf("the placement's features.json: %+v, %v", saved, err)
	}
	// Out of core, the same placement, within 64 MiB more than this
	// process ever held: the run's need starts from the process's
	// resident memory, which in this test binary is what the tests before
	// left to the garbage collector, tens of MiB more on a loaded machine.
	oocDir := filepath.Join(t.TempDir(), "ooc")
	memCap := strconv.FormatInt(ooc.PeakRSS()+64<<20, 10)
	if code, out, errOut := colo(t, "partition", "-k", "2", "--spec", flightSpec, "--memory", memCap, data, "-o", oocDir); code != 0 || !strings.Contains(out, "out of core (table)") {
		t.Fatalf("partition out of core: exit %d: %s%s", code, out, errOut)
	}
	for _, name := range []string{"data.part", "param.part", features.FileName} {
		a, errA := os.ReadFile(filepath.Join(dir, name))
		b, errB := os.ReadFile(filepath.Join(oocDir, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s out of core differs from in memory (%v, %v)", name, errA, errB)
		}
	}
	if code, _, errOut := colo(t, "eval", "--spec", filepath.Join(dir, features.FileName), data,
		"--data-part", filepath.Join(dir, "data.part"), "--param-part", filepath.Join(dir, "param.part")); code != 0 {
		t.Fatalf("eval exit %d: %s", code, errOut)
	}
	svm := filepath.Join(t.TempDir(), "flights.svm")
	if code, _, errOut := colo(t, "convert", "--spec", flightSpec, "--to", "libsvm", data, "-o", svm); code != 0 {
		t.Fatalf("convert exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(svm); err != nil || bytes.Count(b, []byte("\n")) != 500 {
		t.Fatalf("converted: %d lines, %v", bytes.Count(b, []byte("\n")), err)
	}

	shards := filepath.Join(t.TempDir(), "s")
	if code, _, errOut := colo(t, "shard", "--spec", flightSpec, "--machines", "2", "--scheme", "stratified", data, "-o", shards); code != 0 {
		t.Fatalf("shard exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(shards, "shards.txt")); err != nil || bytes.Count(b, []byte("\n")) != 500 {
		t.Fatalf("shards.txt: %d lines, %v", bytes.Count(b, []byte("\n")), err)
	}

	// Training on the placement reads the table with its saved spec
	// (no --spec) and scores the June rows.
	code, out, errOut = colo(t, "train", "--app", "lr", "--machines", "2", "--placement", dir, "--batch", "50",
		"--max-passes", "5", "--json", "-", data)
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errOut)
	}
	var res struct {
		Samples int      `json:"test_samples"`
		AUC     *float64 `json:"test_auc"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("train --json: %v", err)
	}
	if res.Samples != 100 || res.AUC == nil || *res.AUC < 0.8 {
		t.Fatalf("train --json: %d test samples, AUC %v: want the 100 June rows scored with an AUC of at least 0.8", res.Samples, res.AUC)
	}
	t.Logf("test AUC %.4f", *res.AUC)
	// A checkpointed job keeps the spec beside its checkpoints, for
	// --resume.
	ck := filepath.Join(t.TempDir(), "ck")
	if code, _, errOut := colo(t, "train", "--app", "lr", "--machines", "2", "--spec", flightSpec, "--batch", "100",
		"--max-passes", "2", "--checkpoint", ck, "--checkpoint-every", "5", data); code != 0 {
		t.Fatalf("train --checkpoint exit %d: %s", code, errOut)
	}
	if f, err := features.Load(ck); err != nil || f == nil || f.Spec.Compact() != saved.Spec.Compact() {
		t.Fatalf("the checkpoint's features.json: %+v, %v", f, err)
	}
	other := strings.Replace(flightSpec, "quantile(distance, 4)", "log(distance)", 1)
	if code, _, errOut := colo(t, "train", "--app", "lr", "--machines", "2", "--placement", dir, "--spec", other, data); code == 0 || !strings.Contains(errOut, "differs from") {
		t.Fatalf("train with a --spec other than the placement's: exit %d, %s", code, errOut)
	}
}

// TestCtrTable trains the click-through model on a table through a spec:
// in this process and as processes (BSP, the same training bit for bit),
// asynchronously, and refuses a spec without a categorical field and a
// file without a spec.
func TestCtrTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes")
	}
	data := flightTable(t, 600)
	args := []string{"--app", "ctr", "--spec", flightSpec, "--machines", "2", "--batch", "50", "--max-passes", "4", "--dim", "8", "--hidden", "16", data}
	want := trainInProcess(t, args...)
	if want.Samples != 100 || want.AUC == nil || *want.AUC < 0.8 || want.LogLoss == nil {
		t.Fatalf("%d test samples, AUC %v: want the 100 June rows scored with an AUC of at least 0.8", want.Samples, want.AUC)
	}
	got, _ := trainBinary(t, 3*time.Minute, append(args, "--processes")...)
	sameTraining(t, want, got)
	async := trainInProcess(t, append(args, "--consistency", "async")...)
	if async.AUC == nil || *async.AUC < 0.8 {
		t.Errorf("async: AUC %v, want at least 0.8", async.AUC)
	}
	if code, _, errOut := colo(t, "train", "--app", "ctr", "--spec", "delay > 15 ~ std(distance)", data); code == 0 || !strings.Contains(errOut, "no categorical field to embed") {
		t.Errorf("a spec without a categorical field: exit %d, %s", code, errOut)
	}
	svm := filepath.Join(t.TempDir(), "t.svm")
	if err := os.WriteFile(svm, []byte("1 1:1 2:1\n0 2:1 3:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := colo(t, "train", "--app", "ctr", svm); code == 0 || !strings.Contains(errOut, "feature spec (--spec") {
		t.Errorf("libsvm without --spec: exit %d, %s", code, errOut)
	}
}

// TestCtrRuleWithoutScaling: ctr's scaling of asynchronous steps is for
// the rules that have one: a job with ftrl builds under its defaults
// too, and asking for ftrl's scaling is refused.
func TestCtrRuleWithoutScaling(t *testing.T) {
	data := flightTable(t, 60)
	job := filepath.Join(t.TempDir(), "ftrl.json")
	if code, _, errOut := colo(t, "train", "--app", "ctr", "--spec", flightSpec, "--updater", "ftrl", "--write-job", job, data); code != 0 {
		t.Errorf("--updater ftrl: exit %d, %s", code, errOut)
	}
	if code, _, errOut := colo(t, "train", "--app", "ctr", "--spec", flightSpec, "--updater", "ftrl", "--consistency", "async", "--async-step", "workers", "--write-job", job, data); code != 2 || !strings.Contains(errOut, "only sgd, momentum, adagrad and adam scale their step") {
		t.Errorf("--updater ftrl --async-step workers: exit %d, %s", code, errOut)
	}
}
