#!/bin/sh
# build.sh DIR: builds the test-only kube multi-call binary (etcd, kube-apiserver,
# kube-controller-manager) into DIR/kube, with DIR/etcd, DIR/kube-apiserver and
# DIR/kube-controller-manager as symlinks to it. Needs ~3 GB of RAM and several
# minutes; run it once and point PIPEBENCH_TEST_KUBE_BIN at DIR.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 OUTPUT_DIR" >&2
	exit 2
fi
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/kube.tmp" .
mv "$out/kube.tmp" "$out/kube"
for c in etcd kube-apiserver kube-controller-manager; do
	ln -sf kube "$out/$c"
done
echo "built $out/kube"
