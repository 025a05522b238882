package train

// SetWriteGate has every worker's checkpoint writer call gate(rank,
// round) before it writes the checkpoint of round.
func SetWriteGate(c *Config, gate func(rank, round int)) { c.writeGate = gate }
