package train

import "time"

// SetWriteGate has every worker's checkpoint writer call gate(rank,
// round) before it writes the checkpoint of round.
func SetWriteGate(c *Config, gate func(rank, round int)) { c.writeGate = gate }

// SetCheckpointClock has every worker's checkpoints read the time from
// now instead of time.Now.
func SetCheckpointClock(c *Config, now func() time.Time) { c.checkpointClock = now }
