#!/usr/bin/env bash
# Writes jars.txt: every jar Maven resolves for pom.xml (Apache Kafka, its
# tools, the JMX exporter, slf4j-simple), as its path in a Maven repository,
# its size and its SHA-256. pipebench fetches exactly these from Maven
# Central (fetch.go) and checks each against its checksum. Run it after
# changing pom.xml: `go generate ./sut/kafka` (needs Maven; MAVEN_OPTS and
# -Dmaven.repo.local may point it at a repository of its own).
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mvn -q -B -f pom.xml ${MVN_ARGS:-} dependency:copy-dependencies -Dmdep.useRepositoryLayout=true -DoutputDirectory="$out"
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' pom.xml)
{
	echo "# Apache Kafka $version and what it runs on, as Maven resolves pom.xml (written by jars.sh: go generate)."
	echo "# path in a Maven repository, size in bytes, SHA-256"
	(cd "$out" && find . -name '*.jar' | sed 's:^\./::' | LC_ALL=C sort | while read -r p; do
		printf '%s %s %s\n' "$p" "$(stat -c %s "$p")" "$(sha256sum "$p" | cut -c1-64)"
	done)
} >jars.txt
echo "jars.txt: $(grep -vc '^#' jars.txt) jars"
