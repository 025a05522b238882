package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"colo/app"
	"colo/dashboard"
	"colo/graph"
	"colo/placement"
	"colo/train"
	"colo/train/deploy"
)

// chromium returns the path of a Chromium or Chrome binary: $COLO_CHROMIUM,
// or the first of Debian's and others' names on the PATH.
func chromium() string {
	if p := os.Getenv("COLO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifact returns where to write a test artifact called name:
// $COLO_ARTIFACTS when set, else the test's temporary directory.
func artifact(t *testing.T, name string) string {
	dir := os.Getenv("COLO_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// pageState is what the page says it drew (window.coloDashboard).
type pageState struct {
	Frames      int    `json:"frames"`
	LossUpdates int    `json:"lossUpdates"`
	LossPoints  int    `json:"lossPoints"`
	Status      string `json:"status"`
	Conn        string `json:"conn"`
	Cells       int    `json:"cells"`
	// CostHead and Cost are the cost table's header and its first run's
	// row, cell by cell.
	CostHead []string `json:"costHead"`
	Cost     []string `json:"cost"`
}

const readState = `({frames: coloDashboard.frames, lossUpdates: coloDashboard.lossUpdates, lossPoints: coloDashboard.lossPoints,
	status: document.getElementById("status").textContent, conn: document.getElementById("conn").textContent,
	cells: document.querySelectorAll("#heatmap rect[width]").length,
	costHead: Array.from(document.querySelectorAll("#cost th")).map(th => th.textContent),
	cost: Array.from(document.querySelectorAll("#cost tr:nth-child(2) td")).map(td => td.textContent)})`

// TestBrowser loads the dashboard in headless Chromium, trains a short
// logistic regression on 4 in-process machines while the page watches,
// and checks that the page logged no error, that its charts received at
// least two updates during the training, with every pass on the loss
// chart, the 4 machines and the scheduler in the heat map and the
// placement's R_max in the cost table;
// it writes a screenshot (artifact dashboard.png).
func TestBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium binary (chromium, chromium-browser, google-chrome or $COLO_CHROMIUM): apt-get install chromium to run the dashboard's browser test")
	}
	cfg := dashboard.DefaultConfig()
	cfg.Interval = 100 * time.Millisecond
	board, err := dashboard.Start("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer board.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1100),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	// Every console message, exception and browser log entry of the
	// page, from before it loads.
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				mu.Unlock()
			}
		}
	}()
	var st pageState
	wait := func(what string, ok func(pageState) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			if st, err = chromedp.Run(bctx, chromedp.Evaluate[pageState](readState)); err != nil {
				t.Fatalf("reading the page: %v", err)
			}
			if ok(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed %s: %+v", what, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(board.URL())); err != nil {
		t.Fatalf("loading %s: %v", board.URL(), err)
	}
	wait("a first frame", func(s pageState) bool { return s.Frames >= 1 })

	// A short job: 4 machines on emulated 4 Mbit/s links, 15 passes,
	// about a second.
	g, err := graph.Sparse(graph.SparseConfig{Samples: 2000, Params: 3000, Gamma: 0.99, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = "generated", "random"
	job.Config.Machines, job.Config.MaxPasses, job.Config.Epsilon = 4, 15, 0
	job.Config.LinkBandwidth = 4e6 / 8
	opened, err := app.OpenData(job, &app.Data{Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := opened.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := placement.Evaluate(g, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	board.Run(dashboard.RunInfo{Name: "random", Machines: 4, Width: opened.App.Width(), Cost: cost})
	job.Config.Progress, job.Config.Checked = board.Pass, board.Check
	res, err := train.Run(ctx, job, opened.App, p, deploy.InProcess{Watch: board.Watch})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trained %d passes in %.2f s", res.Passes, res.TrainSeconds)
	wait("every pass", func(s pageState) bool { return s.LossPoints == res.Passes })
	// Passes arrive only while the job trains: each frame that added
	// points to the loss chart was drawn during the training.
	if st.LossUpdates < 2 {
		t.Errorf("the loss chart received %d updates during the training, want at least 2", st.LossUpdates)
	}
	if st.Cells < 5*5 {
		t.Errorf("the heat map has %d cells, want the 4 machines and the scheduler, 25", st.Cells)
	}
	// placement, T_max, R_max, T_sum, …: the cost model's figures as
	// the page formats them.
	wantR, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf("fmt(%d)", cost.RMax)))
	if err != nil {
		t.Fatalf("formatting R_max on the page: %v", err)
	}
	if len(st.Cost) < 4 || len(st.CostHead) < 4 || st.CostHead[2] != "R_max" || st.Cost[0] != "random" || st.Cost[2] != wantR {
		t.Errorf("the cost table is %q, %q; want random's R_max %d (%q) in the third column", st.CostHead, st.Cost, cost.RMax, wantR)
	}
	board.Close()
	wait("the end of the job", func(s pageState) bool { return s.Conn == "the job has ended" && s.Status == "finished" })

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := artifact(t, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the page logged an error: %s", p)
	}
}
