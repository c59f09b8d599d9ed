#!/bin/sh
# build.sh DIR: builds the test-only collector (OTLP receiver -> Prometheus
# exporter, collector-contrib 0.165) into DIR/otelcol-prom. The first build
# downloads about 200 modules; point PIPEBENCH_TEST_OTELCOL_PROM at the binary.
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
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/otelcol-prom.tmp" .
mv "$out/otelcol-prom.tmp" "$out/otelcol-prom"
echo "built $out/otelcol-prom"
