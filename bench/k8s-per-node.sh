#!/bin/sh
# bench/k8s-per-node.sh [NODES] [SAMPLE]: the per-node launch at the
# references' scale (default 1,500 nodes) against a real kube-apiserver,
# etcd and controller manager (tools/kube/build.sh DIR, then
# PIPEBENCH_TEST_KUBE_BIN=DIR), the kubelets simulated (see
# k8s/scale_test.go); prints apply-to-ready, the start barrier's spread,
# the time to collect and merge every Result, the launcher's API calls and
# its peak memory.
set -eu
cd "$(dirname "$0")/.."
: "${PIPEBENCH_TEST_KUBE_BIN:?build the kube binaries with tools/kube/build.sh DIR and set PIPEBENCH_TEST_KUBE_BIN=DIR}"
PIPEBENCH_BENCH_NODES=${1:-1500} PIPEBENCH_BENCH_SAMPLE=${2:-4} \
	go test -count=1 -run '^$' -bench PerNode -benchtime 1x -timeout 40m ./k8s/
