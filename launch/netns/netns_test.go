package netns

import (
	"os/exec"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Machines: 0}, {Machines: 2, Delay: -1}, {Machines: 2, Subnet: "10.1"}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v valid", c)
		}
	}
	if err := (Config{Machines: 3, Rate: "1gbit", Subnet: "10.9.0"}).Validate(); err != nil {
		t.Error(err)
	}
	n := &Net{cfg: Config{Subnet: "10.9.0"}}
	if n.Addr(0) != "10.9.0.1" || n.Addr(2) != "10.9.0.3" {
		t.Errorf("addresses %s %s", n.Addr(0), n.Addr(2))
	}
}

// TestTxBytes sends datagrams from machine 0 to machine 1 (bash's
// /dev/udp) and reads machine 0's transmit counter, which must have grown
// by at least their size. It needs root, iproute2 and bash.
//
// Machine 0 first opens a TCP connection to a port of machine 1 where
// nothing listens: the refusal (machine 1's reset) can only come back
// once machine 0 has resolved machine 1's address (ARP). Without it the
// datagrams waited in the neighbour's queue for the ARP reply, bash
// ended before they left, and under load the counter was read with the
// ARP request alone in it (42 bytes).
func TestTxBytes(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not on PATH")
	}
	n, err := New(Config{Machines: 2, Subnet: "10.214.7"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	before, err := n.TxBytes(0)
	if err != nil {
		t.Fatal(err)
	}
	send := "(: </dev/tcp/" + n.Addr(1) + "/9) 2>/dev/null; " +
		"for i in 1 2 3 4 5; do head -c 1000 /dev/zero > /dev/udp/" + n.Addr(1) + "/9; done"
	if out, err := n.Command(0, bash, "-c", send).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", send, err, out)
	}
	after, err := n.TxBytes(0)
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 5*1000 {
		t.Errorf("machine 0 sent %d bytes for five datagrams of 1,000 bytes", after-before)
	}
	if _, err := n.TxBytes(2); err == nil || !strings.Contains(err.Error(), "machine 2 out of range") {
		t.Errorf("machine 2: %v", err)
	}
}
