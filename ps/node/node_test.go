package node

import (
	"strings"
	"testing"

	"colo/ps/proto"
	"colo/transport/mem"
)

func TestValidate(t *testing.T) {
	net, _ := mem.New(mem.DefaultConfig())
	defer net.Close()
	for _, tc := range []struct {
		f    func(*Config)
		want string
	}{
		{func(c *Config) { c.Role = proto.RoleScheduler }, "Role"},
		{func(c *Config) { c.Network = nil }, "Network"},
		{func(c *Config) { c.Rank = -2 }, "Rank"},
		{func(c *Config) { c.NumWorkers = -1 }, "NumWorkers"},
		{func(c *Config) { c.JoinTimeout = 0 }, "JoinTimeout"},
	} {
		c := DefaultConfig()
		c.Network = Mem{Net: net}
		tc.f(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want an error naming %s", err, tc.want)
		}
	}
}
