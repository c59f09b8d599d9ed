# The pipebench image `pipebench k8s run` starts its pods from: three static
# binaries on a distroless base (pipebench, with its Kubernetes launcher,
# and beside it pipebench-sut and pipebench-load; no shell, no package
# manager), running as a non-root user. The project builds its images without Docker, reproducibly
# (tools/image: `cd tools/image && go run . build`); this file is for those
# who build with Docker.
#
#   docker build -t registry.example/pipebench:1.0 --build-arg VERSION=1.0 --build-arg COMMIT=$(git rev-parse HEAD) .
#   pipebench k8s run scenario.yaml --shards 8 --image registry.example/pipebench:1.0
#
# The same image runs the shards (pipebench-load k8s worker, their metrics
# on 9464), the in-cluster sink when the scenario has one (pipebench-load
# k8s sink), whose ports (8080, 4317, 4318, 9201 and the arrivals feed 7070)
# are all above 1024, open to the non-root user, and the scenario's
# embedded system under test (pipebench k8s sut; an embedded collector is
# this same binary as a child process), whose ports the kernel picks. A
# scenario that embeds a system under test runs pipebench in every pod.
#
# The load generator's image (pipebench-load alone, which --load-image
# runs the shards and the in-cluster sink from) is the target load:
#
#   docker build --target load -t registry.example/pipebench-load:1.0 --build-arg VERSION=1.0 .
#   pipebench k8s run scenario.yaml --image registry.example/pipebench:1.0 --load-image registry.example/pipebench-load:1.0
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
# The tags leave out Prometheus's cloud service discovery, as tools/image
# does (BuildTags there says why).
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -tags remove_all_sd,enable_kubernetes_sd \
      -ldflags="-s -w -X github.com/pipebench/pipebench/internal/cli/buildinfo.Version=${VERSION} -X github.com/pipebench/pipebench/internal/cli/buildinfo.LinkedCommit=${COMMIT}" \
      -o /out/ ./cmd/pipebench-k8s ./cmd/pipebench-sut ./cmd/pipebench-load && mv /out/pipebench-k8s /out/pipebench

# The load generator's image leaves out the PNG renderer and the SQL
# results history, as tools/image does (LoadBuildTags there says why).
FROM build AS build-load
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -tags pipebench_nopng,pipebench_nosqlstore \
      -ldflags="-s -w -X github.com/pipebench/pipebench/internal/cli/buildinfo.Version=${VERSION} -X github.com/pipebench/pipebench/internal/cli/buildinfo.LinkedCommit=${COMMIT}" \
      -o /load/ ./cmd/pipebench-load

FROM gcr.io/distroless/static-debian12:nonroot AS load
COPY --from=build-load /load/pipebench-load /usr/local/bin/
ENV PIPEBENCH_HOME=/tmp/pipebench
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/pipebench-load"]

# The full image, the default target.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pipebench /out/pipebench-sut /out/pipebench-load /usr/local/bin/
# The results history of a run inside a pod is not kept: k8s run merges
# and saves on the launcher's side.
ENV PIPEBENCH_HOME=/tmp/pipebench
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/pipebench"]
