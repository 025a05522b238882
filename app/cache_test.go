package app_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/app"
	"colo/graph"
)

// TestCache: every application on graphs opens from the data cache its
// parent wrote as it opens from the files (the same data, the same
// application state, the same placement), with and without a test file;
// the dense applications write none; a damaged cache is an error naming
// it.
func TestCache(t *testing.T) {
	edges := "1 2\n2 3\n3 1\n1 4\n4 5\n5 6\n6 4\n2 5\n3 6\n1 6\n"
	ratings := "1 1 5\n1 2 3\n2 1 4\n2 3 2\n3 2 1\n3 3 5\n4 1 2\n4 2 4\n"
	for _, tc := range []struct{ app, train, test string }{
		{"lr", tiny, ""},
		{"lr", tiny, "1 1:1 3:1\n2 4:1 9:1\n"},
		{"mf", ratings, ""},
		{"embed", edges, ""},
	} {
		name := tc.app
		if tc.test != "" {
			name += " with a test file"
		}
		t.Run(name, func(t *testing.T) {
			job, err := app.DefaultJob(tc.app)
			if err != nil {
				t.Fatal(err)
			}
			ext := map[string]string{"lr": ".svm", "mf": ".tsv", "embed": ".txt"}[tc.app]
			job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "train"+ext, tc.train), "parsa", 2
			if tc.app == "mf" {
				job.Data.Load.Format = string(graph.FormatRatings)
			}
			if tc.test != "" {
				job.Data.Test = writeFile(t, "test"+ext, tc.test)
			}
			want, err := app.Open(job)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "data")
			if ok, err := want.Data.WriteCache(dir); !ok || err != nil {
				t.Fatalf("write the cache: %v, %v", ok, err)
			}
			cached := job
			cached.Data.Cache = dir
			cached.Data.Train = filepath.Join(t.TempDir(), "gone"+ext) // not read
			got, err := app.Open(cached)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want.Data) || !reflect.DeepEqual(got.App, want.App) {
				t.Errorf("opened from the cache: %v, want %v", got.App, want.App)
			}
			p, _, err := want.Place(job)
			if err != nil {
				t.Fatal(err)
			}
			q, _, err := got.Place(cached)
			if err != nil || !reflect.DeepEqual(p, q) {
				t.Errorf("placed from the cache: %v, %v; want %v", q, err, p)
			}
			if err := os.WriteFile(filepath.Join(dir, "train.graph"), []byte("COLOGRB1 and then nothing"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Open(cached); err == nil || !strings.Contains(err.Error(), "train.graph") || !strings.Contains(err.Error(), "data.cache") {
				t.Errorf("a damaged cache: %v", err)
			}
		})
	}
	job, err := app.DefaultJob("mlp")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := (&app.Data{}).WriteCache(filepath.Join(t.TempDir(), "d")); ok || err != nil {
		t.Errorf("data without a graph (%s's): cached %v, %v", job.App, ok, err)
	}
}
