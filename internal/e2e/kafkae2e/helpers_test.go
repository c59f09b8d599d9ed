package kafkae2e

import "github.com/pipebench/pipebench"

// lagMax is the kafka observer's consumer_pending.max of the run.
func lagMax(ks []pipebench.KPI) float64 {
	for _, k := range ks {
		if k.Name == "consumer_pending.max" {
			return k.Value
		}
	}
	return -1
}
