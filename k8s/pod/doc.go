// Package pod is the pods' side of `pipebench k8s run` (package k8s is
// the launcher's): what a shard (`k8s worker`), the in-cluster sink (`k8s
// sink`) and the in-cluster system under test (`k8s sut`) do in their
// pods, the names and ConfigMap keys they share with the launcher, the
// arrivals feed between the sink and the shards, and the shards' Results
// in ConfigMaps (written here, read by the launcher with ReadResult).
//
// The pods read and write ConfigMaps alone, so this package talks to the
// API server through a Client of ConfigMaps: a REST client of its own that
// knows the core group's types alone (NewClient), or, in the launcher, its
// clientset's (ClientFunc); never through client-go's clientsets or typed
// clients (k8s.io/client-go/kubernetes/..., whose scheme holds every API
// group's types) nor through package k8s: the lean load generator,
// pipebench-load, links it and runs the shards and the sink (see
// docs/programs.md).
package pod
