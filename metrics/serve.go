package metrics

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"colo/internal/atomicfile"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Serve listens on addr (host:port; port 0 picks a free one) and answers
// GET /metrics with what g gathers, in the format the scraper asks for
// (the text format by default). It returns the address it listens on and
// stop, which shuts the server down (waiting up to a second for requests
// in flight) and returns once it has stopped; stop may be called more
// than once. Request headers must arrive within five seconds.
func Serve(addr string, g prometheus.Gatherer) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: serve on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	var once sync.Once
	return ln.Addr().String(), func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				srv.Close()
			}
			<-done
		})
	}, nil
}

// Write writes what g gathers to w in the text exposition format.
func Write(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// WriteFile writes what g gathers to path in the text exposition format
// (what node_exporter's textfile collector reads) through atomicfile: a
// regular file is replaced whole, so a reader never sees half a file; a
// device or a FIFO is written through.
func WriteFile(path string, g prometheus.Gatherer) error {
	var b bytes.Buffer
	if err := Write(&b, g); err != nil {
		return err
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
		return fmt.Errorf("metrics: --metrics-file: %w", err)
	}
	return nil
}

// Flags are the metrics flags of a command that runs a cluster: where to
// serve the metrics while the job runs, how long to keep serving their
// final values after it, and a file to write those to.
type Flags struct {
	// Addr is where to serve /metrics (--metrics), such as ":9100"; empty
	// serves nothing.
	Addr string
	// Linger keeps serving the final values this long after the job
	// (--linger), so that a scraper reads them.
	Linger time.Duration
	// File receives the final values in the text format (--metrics-file).
	File string
}

// Register adds --metrics, --linger and --metrics-file to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics while the job runs, such as :9100 (port 0: a free port, printed)")
	fs.DurationVar(&f.Linger, "linger", 0, "with --metrics: keep serving the final values this long after the job ends")
	fs.StringVar(&f.File, "metrics-file", "", "write the final metrics to this file (Prometheus text format) when the job ends")
}

// Enabled reports whether f serves or writes anything.
func (f *Flags) Enabled() bool { return f.Addr != "" || f.File != "" }

// Start serves g at f.Addr (when set) and returns end, to call once the
// job has ended and g holds its final values: end writes f.File (when
// set), keeps serving for f.Linger unless ctx ends first, telling log
// where, then stops the server. An address of port 0 takes a free port,
// and log is told at once where it serves ("metrics: serving
// http://ADDR/metrics"). An error names the flag.
func (f *Flags) Start(g prometheus.Gatherer, log io.Writer) (end func(ctx context.Context) error, err error) {
	if log == nil {
		log = io.Discard
	}
	if f.Linger < 0 {
		return nil, fmt.Errorf("--linger %v is negative", f.Linger)
	}
	if f.File != "" {
		// A file that cannot be written fails now, not after the job.
		if err := atomicfile.CheckFile(f.File); err != nil {
			return nil, fmt.Errorf("--metrics-file: %w", err)
		}
	}
	stop := func() {}
	bound := ""
	if f.Addr != "" {
		if bound, stop, err = Serve(f.Addr, g); err != nil {
			return nil, fmt.Errorf("--metrics: %w", err)
		}
		if _, port, err := net.SplitHostPort(f.Addr); err == nil && port == "0" {
			fmt.Fprintf(log, "metrics: serving http://%s/metrics (--metrics %s: a free port)\n", bound, f.Addr)
		}
	}
	return func(ctx context.Context) error {
		defer stop()
		var err error
		if f.File != "" {
			err = WriteFile(f.File, g)
		}
		if bound != "" && f.Linger > 0 {
			fmt.Fprintf(log, "metrics: the final values stay at http://%s/metrics for %v\n", bound, f.Linger)
			t := time.NewTimer(f.Linger)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		return err
	}, nil
}
