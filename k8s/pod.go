package k8s

import (
	"k8s.io/client-go/kubernetes"

	"github.com/pipebench/pipebench/k8s/pod"
)

// What the launcher shares with the pods (package pod, which the pods'
// program, pipebench-load, links without this package): the labels and
// keys of a run's objects, the pods' environment, the names of the
// in-cluster components' objects.
const (
	LabelRun   = pod.LabelRun
	LabelShard = pod.LabelShard
	LabelPart  = pod.LabelPart
	LabelRole  = pod.LabelRole
	RoleShard  = pod.RoleShard
	RoleSink   = pod.RoleSink
	RoleSUT    = pod.RoleSUT

	KeyScenario      = pod.KeyScenario
	KeyShards        = pod.KeyShards
	KeyDuration      = pod.KeyDuration
	KeyNodes         = pod.KeyNodes
	KeyFile          = pod.KeyFile
	KeyStartAt       = pod.KeyStartAt
	KeyProgressEvery = pod.KeyProgressEvery
	KeyMetricsPort   = pod.KeyMetricsPort
	KeyMetricsLinger = pod.KeyMetricsLinger
	KeyEnded         = pod.KeyEnded

	KeyState    = pod.KeyState
	KeyMessage  = pod.KeyMessage
	KeySent     = pod.KeySent
	KeyParts    = pod.KeyParts
	KeyResult   = pod.KeyResult
	KeyLate     = pod.KeyLate
	StateWait   = pod.StateWait
	StateRun    = pod.StateRun
	StateReady  = pod.StateReady
	StateDone   = pod.StateDone
	StateFailed = pod.StateFailed

	// The in-cluster sink's account.
	KeyReceived   = pod.KeyReceived
	KeyDuplicates = pod.KeyDuplicates
	KeyFaulted    = pod.KeyFaulted
	KeyUnmatched  = pod.KeyUnmatched
	KeyDropped    = pod.KeyDropped

	EnvRun       = pod.EnvRun
	EnvNamespace = pod.EnvNamespace
	EnvPod       = pod.EnvPod
	EnvNode      = pod.EnvNode
	EnvIP        = pod.EnvIP
	EnvSink      = pod.EnvSink
	EnvSUT       = pod.EnvSUT

	FeedPort = pod.FeedPort
)

type (
	SinkSpec   = pod.SinkSpec
	SinkPort   = pod.SinkPort
	SinkCounts = pod.SinkCounts
	Progress   = pod.Progress
)

// ShardName, SinkName and SUTName name the ConfigMaps (and the
// in-cluster components' other objects) of a run.
func ShardName(run string, i int) string { return pod.ShardName(run, i) }
func SinkName(run string) string         { return pod.SinkName(run) }
func SUTName(run string) string          { return pod.SUTName(run) }

// podClient is the pods' client (pod.Client) on the launcher's clientset.
func podClient(c kubernetes.Interface) pod.Client {
	return pod.ClientFunc(func(ns string) pod.ConfigMaps { return c.CoreV1().ConfigMaps(ns) })
}
