// Command libcolo is colo's worker client as a C library, built with
//
//	go build -buildmode=c-shared -o libcolo.so ./cmd/libcolo
//
// which writes libcolo.so and its header libcolo.h. It exports package
// clib through a small C ABI of integers, pointers and JSON strings; the
// Python package python/colo loads it with ctypes.
//
// Every function returns an int64: a non-negative result (0, a handle, a
// count), or −id of an error whose text colo_error copies out (and
// forgets). Handles of sessions, tables and tickets are integers: C never
// holds a Go pointer. A Go panic never crosses into C: each function
// recovers it and returns it as an error.
//
//	int64_t colo_open(const char *config_json);           // session (clib.Config; "" or "{}": the environment)
//	int64_t colo_close(int64_t s, double timeout_s);      // job's outcome; 0 waits as long as others train
//	int64_t colo_rank(int64_t s), colo_size(int64_t s), colo_servers(int64_t s);
//	int64_t colo_info(int64_t s, char *buf, int64_t n);   // JSON: rank, size, servers, consistency, rule
//	int64_t colo_barrier(int64_t s);
//	int64_t colo_allreduce(int64_t s, double *vals, int64_t n);  // in place: the sum over workers
//	int64_t colo_table(int64_t s, const char *spec_json);        // table (clib.TableSpec)
//	int64_t colo_pull(int64_t t, const int64_t *rows, int64_t n, float *dst, int64_t len);   // ticket
//	int64_t colo_push(int64_t t, const int64_t *rows, int64_t n, const float *vals, int64_t len);  // ticket
//	int64_t colo_pull_all(int64_t t, float *dst, int64_t len), colo_push_all(int64_t t, const float *vals, int64_t len);
//	int64_t colo_pull_wait(int64_t t, const int64_t *rows, int64_t n, float *dst, int64_t len);  // colo_pull and colo_wait in one call: 0
//	int64_t colo_wait(int64_t ticket);   // 0; the ticket is gone
//	int64_t colo_poll(int64_t ticket);   // 1 done (wait returns at once), 0 not yet
//	int64_t colo_init_rows(int64_t t, const int64_t *rows, int64_t n, float *dst, int64_t len);
//	int64_t colo_unique(int64_t t, const int64_t *idx, int64_t n, int64_t *uniq, int64_t *inv);  // distinct rows, ascending
//	int64_t colo_save(int64_t s, const char *dir, int64_t step, const void *state, int64_t n);  // collective checkpoint (clib.Session.Save)
//	int64_t colo_load(int64_t s, const char *dir, int64_t step);  // step < 0: the newest; returns the step loaded (clib.Session.Load)
//	int64_t colo_loaded_state(int64_t s, void *buf, int64_t n);  // copies the last load's state, returns its length
//	int64_t colo_error(int64_t id, char *buf, int64_t n);  // copies the text, returns its class
//	int64_t colo_last_error(char *buf, int64_t n);
//	int64_t colo_nop(int64_t x);   // returns x: the fixed cost of a call
//
// Error classes: 1 runtime, 2 bad argument, 3 index out of range, 4
// timeout. Arrays passed to an asynchronous call stay in use until its
// ticket is waited for.
//
// The library holds the one table of handles a C caller needs (the only
// package-level state); one Go c-shared library can be loaded per
// process, and it cannot be used in a child forked after it started (the
// Go runtime's threads are not forked).
package main

/*
#include <stdint.h>
*/
import "C"

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"colo/clib"
)

//export colo_open
func colo_open(config *C.char) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.open(C.GoString(config)))
}

//export colo_close
func colo_close(s C.int64_t, timeout C.double) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.close(int64(s), time.Duration(float64(timeout)*float64(time.Second))))
}

//export colo_rank
func colo_rank(s C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	ss, e := lib.session(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(ss.Rank())
}

//export colo_size
func colo_size(s C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	ss, e := lib.session(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(ss.Size())
}

//export colo_servers
func colo_servers(s C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	ss, e := lib.session(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(ss.Servers())
}

//export colo_info
func colo_info(s C.int64_t, buf *C.char, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	text, e := lib.info(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(copyOut(text, buf, n))
}

//export colo_barrier
func colo_barrier(s C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	ss, e := lib.session(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(lib.fail(ss.Barrier(context.Background())))
}

//export colo_allreduce
func colo_allreduce(s C.int64_t, vals *C.double, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	ss, e := lib.session(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	v, e := floats64(vals, n, "vals")
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(lib.fail(ss.AllReduce(context.Background(), v)))
}

//export colo_table
func colo_table(s C.int64_t, spec *C.char) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.table(int64(s), C.GoString(spec)))
}

//export colo_pull
func colo_pull(t C.int64_t, rows *C.int64_t, n C.int64_t, dst *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, rows, n, dst, length, "dst", func(tb *clib.Table, r []int64, d []float32) int64 {
		return lib.ticket(tb.Pull(r, d))
	})
}

//export colo_pull_wait
func colo_pull_wait(t C.int64_t, rows *C.int64_t, n C.int64_t, dst *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, rows, n, dst, length, "dst", func(tb *clib.Table, r []int64, d []float32) int64 {
		return lib.done(tb.Pull(r, d))
	})
}

//export colo_push
func colo_push(t C.int64_t, rows *C.int64_t, n C.int64_t, vals *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, rows, n, vals, length, "vals", func(tb *clib.Table, r []int64, v []float32) int64 {
		return lib.ticket(tb.Push(r, v))
	})
}

//export colo_pull_all
func colo_pull_all(t C.int64_t, dst *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, nil, 0, dst, length, "dst", func(tb *clib.Table, _ []int64, d []float32) int64 {
		return lib.ticket(tb.PullAll(d))
	})
}

//export colo_push_all
func colo_push_all(t C.int64_t, vals *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, nil, 0, vals, length, "vals", func(tb *clib.Table, _ []int64, v []float32) int64 {
		return lib.ticket(tb.PushAll(v))
	})
}

//export colo_wait
func colo_wait(k C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.wait(int64(k)))
}

//export colo_poll
func colo_poll(k C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.poll(int64(k)))
}

//export colo_init_rows
func colo_init_rows(t C.int64_t, rows *C.int64_t, n C.int64_t, dst *C.float, length C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return rowsCall(t, rows, n, dst, length, "dst", func(tb *clib.Table, r []int64, d []float32) int64 {
		return lib.fail(tb.InitRows(r, d))
	})
}

//export colo_unique
func colo_unique(t C.int64_t, idx *C.int64_t, n C.int64_t, uniq *C.int64_t, inv *C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	tb, e := lib.tableOf(int64(t))
	if e < 0 {
		return C.int64_t(e)
	}
	x, e := ints64(idx, n, "idx")
	if e < 0 {
		return C.int64_t(e)
	}
	u, e := ints64(uniq, n, "uniq")
	if e < 0 {
		return C.int64_t(e)
	}
	v, e := ints64(inv, n, "inv")
	if e < 0 {
		return C.int64_t(e)
	}
	k, err := tb.Unique(x, u, v)
	if err != nil {
		return C.int64_t(lib.fail(err))
	}
	return C.int64_t(k)
}

//export colo_save
func colo_save(s C.int64_t, dir *C.char, step C.int64_t, state unsafe.Pointer, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	if n < 0 || (state == nil && n > 0) {
		return C.int64_t(lib.fail(argError{fmt.Sprintf("state: %d bytes at %p", n, state)}))
	}
	var b []byte
	if n > 0 {
		b = slices.Clone(unsafe.Slice((*byte)(state), int(n)))
	}
	return C.int64_t(lib.save(int64(s), C.GoString(dir), int64(step), b))
}

//export colo_load
func colo_load(s C.int64_t, dir *C.char, step C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(lib.load(int64(s), C.GoString(dir), int64(step)))
}

//export colo_loaded_state
func colo_loaded_state(s C.int64_t, buf unsafe.Pointer, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	state, e := lib.loadedState(int64(s))
	if e < 0 {
		return C.int64_t(e)
	}
	if buf != nil && n > 0 {
		copy(unsafe.Slice((*byte)(buf), int(n)), state)
	}
	return C.int64_t(len(state))
}

//export colo_error
func colo_error(id C.int64_t, buf *C.char, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	text, class := lib.takeError(int64(id))
	copyOut(text, buf, n)
	return C.int64_t(class)
}

//export colo_last_error
func colo_last_error(buf *C.char, n C.int64_t) (ret C.int64_t) {
	defer guard(&ret)
	return C.int64_t(copyOut(lib.lastError(), buf, n))
}

//export colo_nop
func colo_nop(x C.int64_t) C.int64_t { return x }

// rowsCall is the prologue of a call on table t: the table, then the
// rows (none when n is 0) and the caller's float array as Go slices over
// its memory (named in errors), then f, whose result it returns.
func rowsCall(t C.int64_t, rows *C.int64_t, n C.int64_t, arr *C.float, length C.int64_t, name string, f func(*clib.Table, []int64, []float32) int64) C.int64_t {
	tb, e := lib.tableOf(int64(t))
	if e < 0 {
		return C.int64_t(e)
	}
	r, e := ints64(rows, n, "rows")
	if e < 0 {
		return C.int64_t(e)
	}
	a, e := floats32(arr, length, name)
	if e < 0 {
		return C.int64_t(e)
	}
	return C.int64_t(f(tb, r, a))
}

// guard turns a panic into an error result.
func guard(ret *C.int64_t) {
	if r := recover(); r != nil {
		*ret = C.int64_t(lib.fail(fmt.Errorf("internal error (please report): %v", r)))
	}
}

// copyOut copies text into buf of n bytes, NUL-terminated and cut to
// fit; it returns the text's full length.
func copyOut(text string, buf *C.char, n C.int64_t) int {
	if buf != nil && n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		c := copy(b[:n-1], text)
		b[c] = 0
	}
	return len(text)
}

// The arrays of a call, as Go slices over the caller's memory.
func ints64(p *C.int64_t, n C.int64_t, name string) ([]int64, int64) {
	if n < 0 || (p == nil && n > 0) {
		return nil, lib.fail(argError{fmt.Sprintf("%s: %d values at %p", name, n, p)})
	}
	if n == 0 {
		return nil, 0
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n)), 0
}

func floats32(p *C.float, n C.int64_t, name string) ([]float32, int64) {
	if n < 0 || (p == nil && n > 0) {
		return nil, lib.fail(argError{fmt.Sprintf("%s: %d values at %p", name, n, p)})
	}
	if n == 0 {
		return []float32{}, 0
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), int(n)), 0
}

func floats64(p *C.double, n C.int64_t, name string) ([]float64, int64) {
	if n < 0 || (p == nil && n > 0) {
		return nil, lib.fail(argError{fmt.Sprintf("%s: %d values at %p", name, n, p)})
	}
	if n == 0 {
		return nil, 0
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(p)), int(n)), 0
}
