package cluster

import (
	"context"
	"time"

	"colo/ps/node"
	"colo/ps/proto"
)

// joinWithToken tries to join c's scheduler as a worker with a token.
func joinWithToken(ctx context.Context, c *Cluster, token string) error {
	nc := node.DefaultConfig()
	nc.Role, nc.Token, nc.JoinTimeout = proto.RoleWorker, token, 5*time.Second
	if c.net != nil {
		nc.Network = node.Mem{Net: c.net}
	} else {
		nc.Network = node.TCP{Host: "127.0.0.1", Token: token}
		nc.Scheduler = c.schedAddr
	}
	n, err := node.Start(ctx, nc)
	if err == nil {
		n.Close()
	}
	return err
}
