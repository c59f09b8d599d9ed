# Sourced by the scripts that compare this tree's build with an older
# binary or a peer's (kafka.sh, nats.sh, wrk.sh, vegeta.sh). Not a script
# of its own.
#
# copy_binary SRC DST: DST is a copy of the executable SRC written with cp,
# so that the two binaries of one pass have their page cache in the same
# state. A file the Go linker has just written sits in the page cache in
# large folios, and a read fault maps a whole folio: run straight after
# `go build`, pipebench maps 40-80 MB more of itself than the same
# executable copied with cp (docs/benchmarks.md, "Why a freshly built
# binary shows 40-80 MB more"), which a comparison of peak RSS would read as a
# difference between the builds, or against a peer's installed binary.
copy_binary() {
	if [ ! -f "$1" ] || [ ! -x "$1" ]; then
		echo "$1: no such executable (BASELINE names an older pipebench binary)" >&2
		exit 2
	fi
	cp "$1" "$2.copy" && mv "$2.copy" "$2"
}
