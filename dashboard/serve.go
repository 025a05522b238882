package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

//go:embed web
var web embed.FS

// Handler returns the handler of the page, its assets, the event stream
// and the last frame.
func (b *Board) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(web, "web") // the embedded directory exists
	mux.Handle("GET /", http.FileServerFS(assets))
	mux.HandleFunc("GET /events", b.serveEvents)
	mux.HandleFunc("GET /frame.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(b.Frame())
	})
	return mux
}

// serveEvents sends the frames as server-sent events: the last one at
// once, then each new one, until the client leaves, the board sends its
// final frame or the server shuts down. A slow client skips frames: it
// always receives the newest.
func (b *Board) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	wake, leave := b.subscribe()
	defer leave()
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return
	}
	sent := -1
	for {
		b.mu.Lock()
		data, seq, ended := b.frame, b.seq, b.ended
		b.mu.Unlock()
		if seq != sent {
			if err := writeEvent(w, "frame", data); err != nil {
				return
			}
			fl.Flush()
			sent = seq
		}
		if ended {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-b.stopped:
			// The last frame follows Close's sample; wake reports it.
			select {
			case <-wake:
			case <-r.Context().Done():
				return
			}
		}
	}
}

// writeEvent writes one server-sent event; data holds no newline (JSON
// from json.Marshal).
func writeEvent(w io.Writer, event string, data []byte) error {
	if _, err := fmt.Fprintf(w, "event: %s\ndata: ", event); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}

// Serve serves b's handler at addr (host:port; port 0 picks a free one)
// and returns the address it listens on and stop, which shuts the
// server down and returns once it has stopped; stop may be called more
// than once. Close b first: its final frame ends the event streams,
// which stop otherwise cuts after a second. An address in use is an
// error that says so.
func Serve(addr string, b *Board) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return "", nil, fmt.Errorf("%s is already in use (another dashboard or server listens there): choose another address, or port 0 for any free one", addr)
		}
		return "", nil, err
	}
	srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second}
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
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close() // cuts the streams still open
			}
			<-done
		})
	}, nil
}

// Start returns a board with cfg served at addr (--dashboard), after
// telling log where ("dashboard: http://localhost:8080/"); nil, serving
// nothing, when addr is empty. Close sends the final frame and stops the
// server. Errors name the flag.
func Start(addr string, cfg Config, log io.Writer) (*Board, error) {
	if addr == "" {
		return nil, nil
	}
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	bound, stop, err := Serve(addr, b)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("--dashboard %s: %w", addr, err)
	}
	b.url, b.stopServe = "http://"+browsable(bound)+"/", stop
	if log != nil {
		fmt.Fprintf(log, "dashboard: %s\n", b.url)
	}
	return b, nil
}

// URL returns the page's address when Start serves the board, "" when
// not.
func (b *Board) URL() string {
	if b == nil {
		return ""
	}
	return b.url
}

// browsable returns a listening address a browser can open: a wildcard
// host becomes localhost.
func browsable(bound string) string {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
