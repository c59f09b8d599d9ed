package grpcdriver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/scenario"
)

// What `pipebench validate` does with a grpc target, before anything runs:
// a broken .proto, a missing one and a method they do not define are each
// a problem located at its key in the scenario (file:line:col), saying
// what is wrong; a good one passes.
func TestValidateFindsProtoProblems(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../examples/healthevents.proto")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("good.proto", string(good))
	broken := write("broken.proto", "syntax = \"proto3\";\npackage x;\nmessage M { int32 a = 1 }\n")
	reg := pipebench.NewRegistry()
	reg.Generators.Register(payload.MessageFactory())
	reg.Drivers.Register(grpcdriver.Factory())
	const method = "pipebench.healthevents.v1.HealthEventService/Report"
	for _, tc := range []struct {
		name, method, proto string
		want                []string // "" : valid
	}{
		{"good", method, goodFile, nil},
		{"broken .proto", method, broken, []string{"scenario.yaml:5:16", "target.proto_files", "broken.proto:3:"}},
		{"missing .proto", method, filepath.Join(dir, "missing.proto"), []string{"scenario.yaml:5:16", "target.proto_files", "missing.proto"}},
		{"unknown method", "pipebench.healthevents.v1.HealthEventService/Nope", goodFile, []string{"scenario.yaml:4:11", "target.method", "has no method Nope"}},
		{"unknown service", "pipebench.healthevents.v1.Nope/Report", goodFile, []string{"scenario.yaml:4:11", "target.method", "Nope is not defined"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "name: v\ntarget:\n  driver: grpc\n  method: " + tc.method + "\n  proto_files: [" + tc.proto + "]\n  endpoint: 127.0.0.1:9\n" +
				"workload:\n  generator: grpc-message\n  message: {version: 1}\nphases:\n  - {name: p, duration: 1s, rate: 1/s}\n"
			_, err := scenario.Parse("scenario.yaml", []byte(yaml), scenario.Params{Registry: reg})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("a valid scenario: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("validated")
			}
			if pipebench.ExitCode(err) != pipebench.ExitUsage {
				t.Errorf("exit %d, want %d", pipebench.ExitCode(err), pipebench.ExitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
		})
	}
}
