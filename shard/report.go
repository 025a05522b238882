package shard

// Report is SummaryFile as colo shard writes it: the run's settings and
// timings with the quality summary of the assignment.
type Report struct {
	Dataset string `json:"dataset"`
	Labels  string `json:"labels,omitempty"`
	// DataChecksum is the checksum of the data and label files
	// (internal/datasum), so that a reader refuses another dataset's
	// shards.
	DataChecksum   string  `json:"data_checksum"`
	Seed           uint64  `json:"seed"`
	Function       string  `json:"function,omitempty"`
	Greedy         string  `json:"greedy,omitempty"`
	Grow           string  `json:"grow,omitempty"`
	Sigma          float64 `json:"sigma_option,omitempty"`
	LoadSeconds    float64 `json:"load_seconds"`
	Seconds        float64 `json:"seconds"`
	SummarySeconds float64 `json:"summary_seconds"`
	*Summary
}
