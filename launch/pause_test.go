package launch

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
)

// TestPauseLineRoundTrip: the line the scheduler prints when the job
// pauses names the lost nodes and the cause, as the supervisor reads
// them back; the writer passes only such whole lines on, however the
// output is cut.
func TestPauseLineRoundTrip(t *testing.T) {
	for _, c := range []struct {
		lost []transport.NodeID
		want []string
	}{
		{[]transport.NodeID{proto.ServerID(1), proto.WorkerID(1)}, []string{"server 1", "worker 1"}},
		{[]transport.NodeID{proto.WorkerID(3)}, []string{"worker 3"}},
	} {
		cause := &proto.NodeError{ID: c.lost[0], Addr: "127.0.0.1:4000", Err: errors.New("no heartbeat for 3.2s: a: b")}
		line := pauseLine(sched.Pause{Epoch: 2, Cause: cause, Lost: c.lost})
		nodes, why, ok := parsePause(line)
		if wantWhy := "no heartbeat for 3.2s: a: b (" + proto.Name(c.lost[0]); !ok || !slices.Equal(nodes, c.want) || !strings.HasPrefix(why, wantWhy) {
			t.Errorf("%q read back as %q, %q, %v; want %q, %q…", line, nodes, why, ok, c.want, wantWhy)
		}
		if nodes, why, ok := parseAbort(abortLine(cause)); !ok || len(nodes) != 1 || nodes[0] != c.want[0] || !strings.HasPrefix(why, "no heartbeat for 3.2s: a: b (") {
			t.Errorf("abort line %q read back as %q, %q, %v", abortLine(cause), nodes, why, ok)
		}
		var got []string
		var started atomic.Bool
		fl := &firstLine{line: make(chan string, 1), started: &started, paused: func(l string) { got = append(got, l) }}
		out := "scheduler listening on 127.0.0.1:1\njob started: 2 servers, 2 workers\n" + line + "\njob paused: not a pause line\n" + abortLine(cause) + "\njob finished\n"
		for i := 0; i < len(out); i += 7 {
			fl.Write([]byte(out[i:min(i+7, len(out))]))
		}
		if !started.Load() || len(got) != 3 || got[0] != line || got[2] != abortLine(cause) {
			t.Errorf("the writer passed on %q (started %v), want %q first", got, started.Load(), line)
		}
	}
	for _, bad := range []string{"job paused: epoch 1", "job paused: epoch 1: lost : x", "job started: 1"} {
		if _, _, ok := parsePause(bad); ok {
			t.Errorf("%q read as a pause line", bad)
		}
	}
}

// TestBackupLineRoundTrip: the line the scheduler prints when a new
// copy of a server's ranges is in place names both servers, as the
// supervisor reads them back; other lines are not read as one.
func TestBackupLineRoundTrip(t *testing.T) {
	for _, b := range []proto.Backup{{Server: 0, Backup: 2}, {Server: 12, Backup: 3, Seq: 4}} {
		line := backupLine(b)
		if server, backup, ok := parseBackup(line); !ok || server != b.Server || backup != b.Backup {
			t.Errorf("%q read back as server %d, backup %d, %v", line, server, backup, ok)
		}
	}
	for _, bad := range []string{"backup made: server 1", "backup made: server 1 holds a copy of server 2's ranges and more",
		"backup made: server -1 holds a copy of server 2's ranges", "backup made: server 01 holds a copy of server 2's ranges", "job paused: x"} {
		if _, _, ok := parseBackup(bad); ok {
			t.Errorf("%q read as a backup line", bad)
		}
	}
}

// FuzzParseBackup: a line of the scheduler read as a backup line names
// two servers of non-negative rank and is exactly the line the
// scheduler prints for them.
func FuzzParseBackup(f *testing.F) {
	f.Add(backupLine(proto.Backup{Server: 0, Backup: 2}))
	f.Add("backup made: server 1 holds a copy of server 2's ranges\n")
	f.Add("backup made: server +1 holds a copy of server 2's ranges")
	f.Fuzz(func(t *testing.T, line string) {
		server, backup, ok := parseBackup(line)
		if !ok {
			return
		}
		if server < 0 || backup < 0 || backupLine(proto.Backup{Server: server, Backup: backup}) != line {
			t.Fatalf("%q read as server %d, backup %d", line, server, backup)
		}
	})
}

// TestAliveLineRoundTrip: a scheduler's line of life gives its timeout
// back to the supervisor; a line without a positive duration is not one.
func TestAliveLineRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{30 * time.Second, 1500 * time.Millisecond, time.Nanosecond} {
		if got, ok := parseAlive(aliveLine(d)); !ok || got != d {
			t.Errorf("%q read back as %v, %v", aliveLine(d), got, ok)
		}
	}
	for _, bad := range []string{"scheduler alive: timeout 0s", "scheduler alive: timeout -1s", "scheduler alive: timeout x", "scheduler alive: 3s", "job started: 1"} {
		if _, ok := parseAlive(bad); ok {
			t.Errorf("%q read as a line of life", bad)
		}
	}
}

// FuzzParseAlive: a line read as a line of life gives a positive
// timeout.
func FuzzParseAlive(f *testing.F) {
	f.Add(aliveLine(30 * time.Second))
	f.Add("scheduler alive: timeout 1h2m3.5s")
	f.Fuzz(func(t *testing.T, line string) {
		if d, ok := parseAlive(line); ok && d <= 0 {
			t.Fatalf("%q read as a timeout of %v", line, d)
		}
	})
}
