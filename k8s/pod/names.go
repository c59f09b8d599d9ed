package pod

// The objects of a run that the launcher and the pods both name: labels,
// the keys of the run's ConfigMaps, the pods' environment.

// Labels and keys shared by the launcher (package k8s) and the pods.
const (
	LabelRun   = "pipebench.dev/run"
	LabelShard = "pipebench.dev/shard"
	LabelPart  = "pipebench.dev/part"
	// LabelRole tells the shards' pods (shard) from the in-cluster
	// sink's (sink).
	LabelRole = "pipebench.dev/role"
	RoleShard = "shard"
	RoleSink  = "sink"
	RoleSUT   = "sut"

	KeyScenario = "scenario.yaml"
	KeyShards   = "shards"
	KeyDuration = "duration"
	KeyNodes    = "nodes"
	KeyFile     = "file"
	KeyStartAt  = "start-at"
	// KeyProgressEvery is how often the shards write their progress.
	KeyProgressEvery = "progress-every"
	// KeyMetricsPort is the port the shards serve their metrics on.
	KeyMetricsPort = "metrics-port"
	// KeyMetricsLinger is how long a shard waits, its run over, for its
	// final metrics to be scraped before it reports its Result.
	KeyMetricsLinger = "metrics-linger"
	// KeyEnded is written by the launcher once it collected every shard:
	// the in-cluster sink then writes its counts into its ConfigMap.
	KeyEnded = "ended-at"

	// EnvSink names, in a shard's pod, the in-cluster sink's host (its
	// Service's DNS name).
	EnvSink = "PIPEBENCH_K8S_SINK"
	// EnvSUT names, in a shard's pod, the in-cluster system under test's
	// host (its headless Service's DNS name).
	EnvSUT = "PIPEBENCH_K8S_SUT"

	KeyState    = "state"
	KeyMessage  = "message"
	KeySent     = "sent"
	KeyParts    = "parts"
	KeyResult   = "result.json.gz"
	StateWait   = "waiting"
	StateRun    = "running"
	StateDone   = "done"
	StateFailed = "failed"
)

// SinkName names the in-cluster sink's Deployment, Service and ConfigMap.
func SinkName(run string) string { return run + "-sink" }

// SUTName names the in-cluster system under test's Deployment, Service
// and ConfigMap.
func SUTName(run string) string { return run + "-sut" }

// SinkSpec describes the in-cluster sink: the ports it receives on.
type SinkSpec struct {
	Type  string // the scenario's sink type, for the pod's labels
	Ports []SinkPort
}

// SinkPort is one port of the in-cluster sink.
type SinkPort struct {
	Name string // an IANA service name: http, grpc, ...
	Port int32
}
