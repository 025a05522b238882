package launch

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestStandbyFlags: the identity is read from --scheduler-identity (a
// fresh one without), refused with the variable's name when it is not a
// key, and a takeover needs the address of the scheduler it takes over.
func TestStandbyFlags(t *testing.T) {
	var c ClusterFlags
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	c.Register(fs)
	id := NewSchedulerIdentity()
	if err := fs.Parse([]string{"--takeover", "--scheduler-identity", id}); err != nil {
		t.Fatal(err)
	}
	if !c.Standby.Takeover || c.Standby.Identity != id {
		t.Fatalf("flags %+v", c.Standby)
	}
	k1, err := c.Standby.identity()
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := c.Standby.identity()
	if !bytes.Equal(k1.Bytes(), k2.Bytes()) {
		t.Fatal("the same flag gave two identities")
	}
	if a, _ := (StandbyFlags{}).identity(); a == nil {
		t.Fatal("no fresh identity")
	}
	for _, bad := range []string{"zz", "abcd"} {
		if _, err := (StandbyFlags{Identity: bad}).identity(); err == nil || !strings.Contains(err.Error(), "COLO_SCHEDULER_IDENTITY") {
			t.Errorf("identity %q: %v", bad, err)
		}
	}
	for addr, ok := range map[string]bool{"127.0.0.1:7070": true, "127.0.0.1:0": false, "host": false} {
		if err := c.Standby.check(addr); (err == nil) != ok {
			t.Errorf("takeover at %q: %v", addr, err)
		}
	}
	if err := (StandbyFlags{Standby: true}).check("127.0.0.1:0"); err != nil {
		t.Errorf("a standby at port 0: %v", err)
	}
}
