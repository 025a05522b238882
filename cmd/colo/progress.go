package main

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// progressBar draws a progress bar on a terminal. It is safe for use from
// several goroutines; on anything but a terminal it draws nothing.
type progressBar struct {
	e     *env
	label string
	mu    sync.Mutex
	last  time.Time
	start time.Time
	drawn bool
}

func newProgressBar(e *env, label string) *progressBar {
	return &progressBar{e: e, label: label, start: time.Now()}
}

// update is a progress callback: done out of total units.
func (p *progressBar) update(done, total int64) {
	if !p.e.isTerminal || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	const width = 30
	frac := min(1, float64(done)/float64(total))
	n := int(frac * width)
	fmt.Fprintf(p.e.errOut, "\r%s [%s%s] %3.0f%% %.1fs", p.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, now.Sub(p.start).Seconds())
	p.drawn = true
}

// finish clears the bar's line.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintf(p.e.errOut, "\r%s\r", strings.Repeat(" ", len(p.label)+50))
		p.drawn = false
	}
}
