package metrics

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"colo/internal/tempdir"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// Cluster gathers the metrics of a cluster of processes for the
// launcher's --metrics (colo launch): each process serves its own on a loopback port and
// writes its final values to a file when it ends; a scrape of the
// launcher reads the file of a process that has ended and asks the others
// over HTTP, and labels every sample with process="scheduler",
// "machine_0", … (the launcher's own runtime metrics: process="launch").
type Cluster struct {
	dir   string
	own   *prometheus.Registry
	mu    sync.Mutex
	procs []*procMetrics
}

// procMetrics is where one process's metrics are.
type procMetrics struct {
	label, addr, file string
}

// NewCluster returns the metrics of a cluster with none of its processes
// yet; Close removes its files.
func NewCluster() (*Cluster, error) {
	dir, err := tempdir.Make("colo-metrics-")
	if err != nil {
		return nil, err
	}
	own := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"process": "launch"}, own).MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Cluster{dir: dir, own: own}, nil
}

// Args returns the metrics flags of the process named name (nil on a nil
// Cluster), and registers it.
func (c *Cluster) Args(name string) []string {
	if c == nil {
		return nil
	}
	label := strings.ReplaceAll(name, " ", "_")
	p := &procMetrics{label: label, addr: freeLoopbackAddr(), file: filepath.Join(c.dir, label+".prom")}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return []string{"--metrics", p.addr, "--metrics-file", p.file}
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago ("127.0.0.1:0", any port, when none can be found: that process's
// metrics are then not reachable while it runs, only from its file).
func freeLoopbackAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Gather merges the launcher's metrics with every process's.
func (c *Cluster) Gather() ([]*dto.MetricFamily, error) {
	c.mu.Lock()
	gs := prometheus.Gatherers{c.own}
	for _, p := range c.procs {
		gs = append(gs, p)
	}
	c.mu.Unlock()
	return gs.Gather()
}

// Close removes the files.
func (c *Cluster) Close() {
	if c != nil {
		os.RemoveAll(c.dir)
	}
}

// Gather reads the process's final file, or asks the process; a process
// not (or no longer) answering has no metrics.
func (p *procMetrics) Gather() ([]*dto.MetricFamily, error) {
	var r io.Reader
	if b, err := os.ReadFile(p.file); err == nil {
		r = strings.NewReader(string(b))
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, nil
		}
		r = resp.Body
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, nil // a process cut off mid-answer
	}
	out := make([]*dto.MetricFamily, 0, len(mfs))
	for _, name := range slices.Sorted(maps.Keys(mfs)) {
		mf := mfs[name]
		for _, m := range mf.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("process"), Value: proto.String(p.label)})
			slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
		out = append(out, mf)
	}
	return out, nil
}
