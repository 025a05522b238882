package netns

import "testing"

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
