package k8s

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden manifests")

const scenario = `name: sharded
target: {driver: http, url: "http://sink.load.svc:8080/ingest"}
secret_headers: {Authorization: "${TOKEN}"}
phases:
  - {name: a, duration: 10s, rate: 400/s}
`

// The manifests are what the docs say: ServiceAccount, Role (ConfigMaps
// only), RoleBinding, the scenario's ConfigMap and an Indexed Job of N
// pods, or a DaemonSet with the node list; a golden file each, and each
// document valid YAML.
func TestManifestsGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		o    Options
	}{
		{"job.yaml", Options{Name: "run1", Namespace: "load", Image: "pipebench:test", Shards: 3, Scenario: []byte(scenario), Duration: "1m0s", EnvFromSecret: []string{"pipebench-creds"}}},
		{"daemonset.yaml", Options{Name: "run2", Namespace: "load", Image: "pipebench:test", PerNode: true, Nodes: []string{"n1", "n2"}, Scenario: []byte(scenario)}},
		{"sink.yaml", Options{Name: "run3", Namespace: "load", Image: "pipebench:test", Shards: 2, Scenario: []byte(scenario),
			Sink: &SinkSpec{Type: "otlp", Ports: []SinkPort{{Name: "otlp-grpc", Port: 4317}, {Name: "otlp-http", Port: 4318}}}}},
		{"sut.yaml", Options{Name: "run4", Namespace: "load", Image: "pipebench:test", Shards: 2, Scenario: []byte(scenario),
			Sink: &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}, SUT: &SUTSpec{Type: "otelcol"}}},
	} {
		obj, err := Build(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := obj.WriteYAML(&buf); err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(buf.String(), "\n---\n")
		want := []string{"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Job"}
		if tc.o.PerNode {
			want[4] = "DaemonSet"
		}
		if tc.o.Sink != nil {
			want = []string{"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Service", "Deployment", "Job"}
			// The shards find the sink by its Service's name.
			if !strings.Contains(buf.String(), "value: "+tc.o.Name+"-sink.load.svc") || !strings.Contains(buf.String(), "- sink\n") {
				t.Errorf("%s: the shards are not given the sink's Service name, or the sink pod's command", tc.file)
			}
		}
		if tc.o.SUT != nil {
			want = []string{"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Service", "Deployment", "Service", "Deployment", "Job"}
			// The shards find the system under test by its headless
			// Service's name; it finds the sink by the sink's.
			for _, s := range []string{"value: run4-sut.load.svc", "clusterIP: None", "- sut\n", "name: run4-sut"} {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("%s: no %q in the manifests", tc.file, s)
				}
			}
			if strings.Count(buf.String(), "value: run4-sink.load.svc") != 2 {
				t.Errorf("%s: the shards and the system under test are not both given the sink's Service name", tc.file)
			}
		}
		if len(docs) != len(want) {
			t.Fatalf("%s: %d documents, want %d", tc.file, len(docs), len(want))
		}
		for i, d := range docs {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("%s doc %d: %v", tc.file, i, err)
			}
			if m["kind"] != want[i] {
				t.Errorf("%s doc %d: kind %v, want %s", tc.file, i, m["kind"], want[i])
			}
		}
		path := filepath.Join("testdata", tc.file)
		if *update {
			os.WriteFile(path, buf.Bytes(), 0o644)
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(golden, buf.Bytes()) {
			t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", tc.file, buf.String())
		}
	}
}

// A credential written as a literal would land in a ConfigMap and in the
// printed manifests: refused, with the line; ${VAR} references pass.
func TestLiteralSecretsRefused(t *testing.T) {
	for _, bad := range []string{
		"target: {url: \"postgres://u:hunter2@db:5432/x\"}\n",
		"observers:\n  - type: x\n    password: hunter2\n",
		"secret_headers:\n  Authorization: Bearer abc\n",
	} {
		err := CheckNoLiteralSecrets([]byte(bad))
		if err == nil {
			t.Errorf("not refused:\n%s", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "abc") {
			t.Errorf("the refusal repeats the secret: %v", err)
		}
		if !strings.Contains(err.Error(), "holds") && !strings.Contains(err.Error(), "URL") || !strings.Contains(err.Error(), "--env-from-secret") {
			t.Errorf("the refusal names no line or remedy: %v", err)
		}
	}
	for _, good := range []string{
		scenario,
		"target: {url: \"postgres://u:${PGPASSWORD}@db:5432/x\"}\n",
		"password: \"${PW:-x}\"\n",
		"# password: hunter2\n",
	} {
		if err := CheckNoLiteralSecrets([]byte(good)); err != nil {
			t.Errorf("refused %q: %v", good, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Name: "Bad_Name", Namespace: "", Image: "", Shards: 0, Scenario: nil}
	err := o.Validate()
	if err == nil {
		t.Fatal("passed")
	}
	for _, want := range []string{"--name", "--namespace", "--image", "--shards", "empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %s problem in: %v", want, err)
		}
	}
}
