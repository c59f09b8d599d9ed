#!/bin/sh
# build.sh DIR: builds the test-only collector (OTLP receiver -> Prometheus
# exporter, collector-contrib 0.165) as DIR/otelcol-prom; the first build
# downloads about 200 modules. Point PIPEBENCH_TEST_OTELCOL_PROM at it.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTPUT_DIR" >&2; exit 2; }
mkdir -p "$1"
bin=$(cd "$1" && pwd)/otelcol-prom
cd "$(dirname "$0")"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" . && mv "$bin.tmp" "$bin"
echo "built $bin"
