package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"colo/clib"
)

// main is empty: the library's entry points are its exported functions
// (main.go, which needs cgo; without cgo the package builds as an empty
// program, so that go build ./... passes).
func main() {}

// Error classes.
const (
	classRuntime = 1
	classArg     = 2
	classIndex   = 3
	classTimeout = 4
)

// argError is a bad argument.
type argError struct{ msg string }

func (e argError) Error() string { return e.msg }

// classOf returns an error's class.
func classOf(err error) int {
	var ae argError
	switch {
	case errors.As(err, &ae):
		return classArg
	case isIndex(err):
		return classIndex
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded"):
		return classTimeout
	}
	return classRuntime
}

// lib is the library's table of handles: the one piece of state a C
// caller cannot hold itself.
var lib = newRegistry(clib.Getenv)

// registry maps the integer handles given to C to sessions, tables,
// tickets and errors.
type registry struct {
	getenv func(string) string

	mu       sync.Mutex
	next     int64
	sessions map[int64]*clib.Session
	tables   map[int64]*clib.Table
	owner    map[int64]int64 // table → session
	tickets  map[int64]*clib.Ticket
	errs     map[int64]error
	last     string
	loaded   map[int64][]byte // session → the state of its last Load
}

func newRegistry(getenv func(string) string) *registry {
	return &registry{getenv: getenv, sessions: map[int64]*clib.Session{}, tables: map[int64]*clib.Table{},
		owner: map[int64]int64{}, tickets: map[int64]*clib.Ticket{}, errs: map[int64]error{}, loaded: map[int64][]byte{}}
}

// maxErrors bounds the errors kept for colo_error; the oldest go first.
const maxErrors = 1024

// fail records err and returns its negative id; nil gives 0.
func (r *registry) fail(err error) int64 {
	if err == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	id := r.next
	r.errs[id] = err
	r.last = err.Error()
	if len(r.errs) > maxErrors {
		for k := range r.errs {
			if k <= id-maxErrors {
				delete(r.errs, k)
			}
		}
	}
	return -id
}

// takeError returns the text and class of error id and forgets it.
func (r *registry) takeError(id int64) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, ok := r.errs[id]
	if !ok {
		return fmt.Sprintf("error %d is gone (each is read once)", id), classRuntime
	}
	delete(r.errs, id)
	return err.Error(), classOf(err)
}

func (r *registry) lastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// add stores v under a new handle.
func add[T any](r *registry, m map[int64]T, v T) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	m[r.next] = v
	return r.next
}

// open parses a clib.Config (empty: all from the environment), fills
// what it leaves unset from the environment, and opens the session.
func (r *registry) open(text string) int64 {
	cfg := clib.DefaultConfig()
	if strings.TrimSpace(text) != "" {
		d := json.NewDecoder(strings.NewReader(text))
		d.DisallowUnknownFields()
		if err := d.Decode(&cfg); err != nil {
			return r.fail(argError{fmt.Sprintf("configuration %s: %v", text, err)})
		}
	}
	if cfg.Local == nil {
		if err := cfg.FromEnv(r.getenv); err != nil {
			return r.fail(argError{err.Error()})
		}
	}
	if err := cfg.Validate(); err != nil {
		return r.fail(argError{err.Error()})
	}
	s, err := clib.Open(context.Background(), cfg)
	if err != nil {
		var se *clib.SpecError
		if errors.As(err, &se) {
			err = argError{err.Error()}
		}
		return r.fail(err)
	}
	return add(r, r.sessions, s)
}

// session returns session h, or the negative id of the error.
func (r *registry) session(h int64) (*clib.Session, int64) {
	r.mu.Lock()
	s, ok := r.sessions[h]
	r.mu.Unlock()
	if !ok {
		return nil, r.fail(argError{fmt.Sprintf("no session %d (closed, or never opened)", h)})
	}
	return s, 0
}

// close closes session h and forgets it and its tables.
func (r *registry) close(h int64, timeout time.Duration) int64 {
	s, e := r.session(h)
	if e < 0 {
		return e
	}
	r.mu.Lock()
	delete(r.sessions, h)
	delete(r.loaded, h)
	for t, o := range r.owner {
		if o == h {
			delete(r.tables, t)
			delete(r.owner, t)
		}
	}
	r.mu.Unlock()
	return r.fail(s.CloseWait(timeout))
}

// specFail records err, a bad argument when it is a clib.SpecError.
func (r *registry) specFail(err error) int64 {
	var se *clib.SpecError
	if errors.As(err, &se) {
		err = argError{err.Error()}
	}
	return r.fail(err)
}

// save writes the checkpoint of step to dir with the program's state
// (clib.Session.Save).
func (r *registry) save(h int64, dir string, step int64, state []byte) int64 {
	s, e := r.session(h)
	if e < 0 {
		return e
	}
	return r.specFail(s.Save(context.Background(), dir, int(step), state))
}

// load loads the checkpoint of step (< 0: the newest) of dir
// (clib.Session.Load) and returns its step; its state waits for
// loadedState.
func (r *registry) load(h int64, dir string, step int64) int64 {
	s, e := r.session(h)
	if e < 0 {
		return e
	}
	got, state, err := s.Load(context.Background(), dir, int(step))
	if err != nil {
		return r.specFail(err)
	}
	r.mu.Lock()
	r.loaded[h] = state
	r.mu.Unlock()
	return int64(got)
}

// loadedState returns the state of session h's last load.
func (r *registry) loadedState(h int64) ([]byte, int64) {
	if _, e := r.session(h); e < 0 {
		return nil, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loaded[h], 0
}

// info returns session h's facts as JSON.
func (r *registry) info(h int64) (string, int64) {
	s, e := r.session(h)
	if e < 0 {
		return "", e
	}
	b, err := json.Marshal(struct {
		Rank        int    `json:"rank"`
		Size        int    `json:"size"`
		Servers     int    `json:"servers"`
		Consistency string `json:"consistency"`
		Rule        any    `json:"rule"`
		PID         int    `json:"pid"`
	}{s.Rank(), s.Size(), s.Servers(), s.Consistency(), s.Rule(), os.Getpid()})
	if err != nil {
		return "", r.fail(err)
	}
	return string(b), 0
}

// table declares a table of session h.
func (r *registry) table(h int64, text string) int64 {
	s, e := r.session(h)
	if e < 0 {
		return e
	}
	var spec clib.TableSpec
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&spec); err != nil {
		return r.fail(argError{fmt.Sprintf("table declaration %s: %v", text, err)})
	}
	if err := spec.Validate(); err != nil {
		return r.fail(argError{err.Error()})
	}
	t, err := s.Declare(context.Background(), spec)
	if err != nil {
		var se *clib.SpecError
		if errors.As(err, &se) {
			err = argError{err.Error()}
		}
		return r.fail(err)
	}
	id := add(r, r.tables, t)
	r.mu.Lock()
	r.owner[id] = h
	r.mu.Unlock()
	return id
}

// tableOf returns table h.
func (r *registry) tableOf(h int64) (*clib.Table, int64) {
	r.mu.Lock()
	t, ok := r.tables[h]
	r.mu.Unlock()
	if !ok {
		return nil, r.fail(argError{fmt.Sprintf("no table %d (its session is closed, or it was never declared)", h)})
	}
	return t, 0
}

// ticket stores k, or records err.
func (r *registry) ticket(k *clib.Ticket, err error) int64 {
	if err != nil {
		var ie *clib.IndexError
		if !errors.As(err, &ie) {
			err = argError{err.Error()}
		}
		return r.fail(err)
	}
	return add(r, r.tickets, k)
}

// done waits for k, a call's ticket that was never stored (colo_pull_wait),
// or records err as ticket does.
func (r *registry) done(k *clib.Ticket, err error) int64 {
	if err != nil {
		return r.ticket(nil, err)
	}
	return r.fail(k.Wait())
}

// wait waits for ticket h and forgets it.
func (r *registry) wait(h int64) int64 {
	r.mu.Lock()
	k, ok := r.tickets[h]
	delete(r.tickets, h)
	r.mu.Unlock()
	if !ok {
		return r.fail(argError{fmt.Sprintf("no ticket %d (each is waited for once)", h)})
	}
	return r.fail(k.Wait())
}

// poll reports whether ticket h is done.
func (r *registry) poll(h int64) int64 {
	r.mu.Lock()
	k, ok := r.tickets[h]
	r.mu.Unlock()
	if !ok {
		return r.fail(argError{fmt.Sprintf("no ticket %d (each is waited for once)", h)})
	}
	if k.Done() {
		return 1
	}
	return 0
}

// isIndex reports whether err is a row out of range.
func isIndex(err error) bool {
	var ie *clib.IndexError
	return errors.As(err, &ie)
}
