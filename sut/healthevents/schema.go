package healthevents

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/internal/format/protoschema"
)

// Service is the gRPC service the SUT serves, and its methods.
const (
	Service      = "pipebench.healthevents.v1.HealthEventService"
	MethodReport = Service + "/Report"
	MethodStream = Service + "/ReportStream"
)

// Effect is one applied event.
type Effect struct {
	Seq      uint64    `json:"seq"`
	Node     string    `json:"node"`
	Sent     time.Time `json:"sent,omitzero"` // the client's send time (pipebench-sent metadata), if given
	Received time.Time `json:"received"`
	Applied  time.Time `json:"applied"`
}

// EffectsPage is the answer of GET /effects?from=K: the effects applied
// K, K+1, ... in order, at most limit of them, and the cursor to ask from
// next.
type EffectsPage struct {
	Effects []Effect `json:"effects"`
	Next    int      `json:"next"`
	Backlog int      `json:"backlog"`
}

// Schema is the service's built-in healthevents.proto (examples/),
// compiled: its files (what server reflection answers from) and its two
// methods, MethodReport and MethodStream.
type Schema struct {
	Files          *protoregistry.Files
	Report, Stream protoreflect.MethodDescriptor
}

// CompileSchema compiles the built-in proto: for the service, and for a
// test's stand-in for it or a client of it, which encode and decode what
// it does.
func CompileSchema() (Schema, error) {
	files, err := protoschema.Compile(context.Background(), []string{"healthevents.proto"}, nil, examples.FS)
	if err != nil {
		return Schema{}, fmt.Errorf("healthevents: the built-in proto does not compile: %w", err)
	}
	sc := Schema{Files: files}
	if sc.Report, err = protoschema.Method(files, MethodReport); err != nil {
		return Schema{}, err
	}
	if sc.Stream, err = protoschema.Method(files, MethodStream); err != nil {
		return Schema{}, err
	}
	return sc, nil
}
