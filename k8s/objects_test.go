package k8s

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench"
)

var update = flag.Bool("update", false, "rewrite the golden manifests")

const testScenario = `name: sharded
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
		{"job.yaml", Options{Name: "run1", Namespace: "load", Image: "pipebench:test", Shards: 3, Scenario: []byte(testScenario), Duration: "1m0s", EnvFromSecret: []string{"pipebench-creds"}}},
		{"daemonset.yaml", Options{Name: "run2", Namespace: "load", Image: "pipebench:test", PerNode: true, Nodes: []string{"n1", "n2"}, Scenario: []byte(testScenario)}},
		{"sink.yaml", Options{Name: "run3", Namespace: "load", Image: "pipebench:test", Shards: 2, Scenario: []byte(testScenario),
			Sink: &SinkSpec{Type: "otlp", Ports: []SinkPort{{Name: "otlp-grpc", Port: 4317}, {Name: "otlp-http", Port: 4318}}}}},
		{"sut.yaml", Options{Name: "run4", Namespace: "load", Image: "pipebench:test", Shards: 2, Scenario: []byte(testScenario),
			Sink: &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}, SUT: &SUTSpec{Type: "otelcol"}, EmbedsSUT: true}},
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
		id := []string{"ServiceAccount", "Role", "RoleBinding"}
		want := append(append([]string{}, id...), "ConfigMap", "Job")
		if tc.o.PerNode {
			want[4] = "DaemonSet"
		}
		if tc.o.Sink != nil {
			want = append(append(append([]string{}, id...), id...), "ConfigMap", "Service", "Job", "Job")
			// The shards find the sink by its Service's name.
			if !strings.Contains(buf.String(), "value: "+tc.o.Name+"-sink.load.svc") || !strings.Contains(buf.String(), "- sink\n") {
				t.Errorf("%s: the shards are not given the sink's Service name, or the sink pod's command", tc.file)
			}
		}
		if tc.o.SUT != nil {
			want = append(append(append(append([]string{}, id...), id...), id...), "ConfigMap", "Service", "Job", "Service", "Job", "Job")
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
		// The shards and the in-cluster sink run the lean load
		// generator, unless the scenario embeds a system under test,
		// which only pipebench carries: then every pod runs pipebench.
		prog := "pipebench-load"
		if tc.o.EmbedsSUT {
			prog = "pipebench"
		}
		for _, s := range []string{"- " + prog + "\n        - k8s\n        - worker\n", "- " + prog + "\n            - k8s\n            - ready\n"} {
			if !strings.Contains(buf.String(), s) {
				t.Errorf("%s: the shards do not run %s (no %q)", tc.file, prog, s)
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

// credentialShapes are the credential shapes the root package redacts,
// each with the literal credential it holds: a URL's password for a few
// schemes, a NATS token URL for every NATS scheme, a query parameter for
// every name RedactText hides, and a value under every key IsSecretName
// knows. Each shape is also checked against RedactText or IsSecretName,
// so that this list stays the class they define.
func credentialShapes(t *testing.T) (urls []string, keys []string) {
	for _, scheme := range []string{"postgres", "postgresql", "http", "https", "amqp", "mongodb", "redis", "nats"} {
		urls = append(urls, scheme+"://user:LITERAL@db.example:5432/x")
	}
	for _, scheme := range []string{"nats", "tls", "ws", "wss"} {
		urls = append(urls, scheme+"://LITERAL@nats.example:4222")
	}
	// Any parameter but a few known harmless: the credential names, and
	// vendors' signed URLs' names.
	for _, name := range []string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "credential", "auth",
		"access_token", "X-Auth-Key", "client_secret", "PGPASSWORD", "X-Amz-Signature", "X-Amz-Security-Token", "sig",
		"X-Goog-Signature", "Signature", "Key-Pair-Id", "a"} {
		for _, sep := range []string{"?", "?format=json&", "?format=json;"} {
			urls = append(urls, "https://h.example/p"+sep+name+"=LITERAL")
		}
	}
	for _, u := range urls {
		if r := pipebench.RedactText(u); r == u || strings.Contains(r, "LITERAL") {
			t.Fatalf("the shape %q is not one RedactText hides (%q): fix the test's list", u, r)
		}
	}
	keys = []string{"password", "passwd", "pwd", "secret", "token", "apikey", "api-key", "api_key", "credential", "auth",
		"cookie", "private-key", "private_key", "access-key", "access_key", "dsn", "Authorization", "X-Api-Key", "DB_PASSWORD"}
	for _, k := range keys {
		if !pipebench.IsSecretName(k) {
			t.Fatalf("the key %q is not one IsSecretName knows: fix the test's list", k)
		}
	}
	return urls, keys
}

// The class of credentials run redacts never reaches a ConfigMap: every
// shape, written as a literal, or as the default of a ${VAR:-default}, in
// a URL, a query string or under a key naming a credential, is refused
// without repeating it; the same positions written as ${VAR} pass.
func TestLiteralSecretsRefused(t *testing.T) {
	urls, keys := credentialShapes(t)
	doc := func(key, value string) []byte {
		b, err := yaml.Marshal(map[string]any{"name": "s", "target": map[string]any{"driver": "http", key: value}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	refused := func(what string, scen []byte) {
		t.Helper()
		err := CheckNoLiteralSecrets(scen)
		if err == nil {
			t.Errorf("%s: not refused:\n%s", what, scen)
			return
		}
		if strings.Contains(err.Error(), "LITERAL") || !strings.Contains(err.Error(), "--env-from-secret") {
			t.Errorf("%s: the refusal repeats the secret or names no remedy: %v", what, err)
		}
	}
	passes := func(what string, scen []byte) {
		t.Helper()
		if err := CheckNoLiteralSecrets(scen); err != nil {
			t.Errorf("%s: refused: %v\n%s", what, err, scen)
		}
	}
	for _, u := range urls {
		refused("literal "+u, doc("url", u))
		// The literal as a default: what a pod without the variable sends.
		refused("default "+u, doc("url", strings.Replace(u, "LITERAL", "${V:-LITERAL}", 1)))
		refused("whole default "+u, doc("url", "${TARGET:-"+u+"}"))
		passes("reference "+u, doc("url", strings.Replace(u, "LITERAL", "${V}", 1)))
	}
	for _, k := range keys {
		refused("key "+k, doc(k, "LITERAL"))
		refused("key "+k+" default", doc(k, "${PW:-LITERAL}"))
		refused("key "+k+" scheme", doc(k, "Bearer LITERAL"))
		refused("nested key "+k, []byte("name: s\nsecret_headers:\n  "+k+": LITERAL\n"))
		passes("key "+k+" reference", doc(k, "${PW}"))
		passes("key "+k+" scheme reference", doc(k, "Bearer ${TOKEN}"))
		passes("key "+k+" empty default", doc(k, "${PW:-}"))
	}
	// Any header but a few known harmless, whatever the vendor calls it.
	for _, h := range []string{"X-Honeycomb-Team", "DD-API-KEY", "X-Sentry-Auth", "X-SF-Token", "Lightstep-Access-Token",
		"Ocp-Apim-Subscription-Key", "X-Goog-Api-Key", "Api-Key", "X-License-Key", "X-Anything"} {
		refused("header "+h, []byte("name: s\ntarget:\n  headers:\n    "+h+": LITERAL\n"))
		passes("header "+h+" reference", []byte("name: s\ntarget:\n  headers:\n    "+h+": ${V}\n"))
	}
	for _, h := range []string{"Content-Type", "User-Agent", "ce-type", "X-Tenant"} {
		passes("safe header "+h, []byte("name: s\ntarget:\n  headers:\n    "+h+": demo\n"))
	}
	// A variable named like a credential, given a default under any key.
	refused("secret variable default", doc("headers", "${API_TOKEN:-LITERAL}"))
	passes("plain default", doc("url", "${TARGET:-http://127.0.0.1:8080/ingest}"))
	passes("the test scenario", []byte(testScenario))
	passes("a comment", []byte("# password: LITERAL\nname: s\n"))
	passes("an escaped dollar", doc("url", "http://h.example/$${x}"))
}

// FuzzLiteralSecrets: whatever string RedactText would change, written as
// a literal value under any key, is refused; and any literal under a key
// naming a credential is.
func FuzzLiteralSecrets(f *testing.F) {
	urls, _ := credentialShapes(&testing.T{})
	for _, u := range urls {
		f.Add(u)
	}
	f.Add("http://127.0.0.1:8080/")
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "$") {
			return // references are the other test's
		}
		scen, err := yaml.Marshal(map[string]any{"name": "s", "url": s, "password": s})
		if err != nil {
			return
		}
		err = CheckNoLiteralSecrets(scen)
		if strings.TrimSpace(s) != "" && !authScheme.MatchString(s) && err == nil {
			t.Errorf("%q under password: not refused", s)
		}
		scen, _ = yaml.Marshal(map[string]any{"name": "s", "url": s})
		if pipebench.RedactText(s) != s && CheckNoLiteralSecrets(scen) == nil {
			t.Errorf("%q: RedactText hides part of it, the check lets it through", s)
		}
	})
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

// With LoadImage, the pods that run pipebench-load (the shards and the
// in-cluster sink) start from it and the system under test's from Image;
// a scenario that embeds a system under test runs every pod from Image,
// since only pipebench carries it.
func TestLoadImage(t *testing.T) {
	sink := &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}
	images := func(o Options) (shard, sinkImg, sut string) {
		t.Helper()
		obj, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		shard, sinkImg = obj.Job.Spec.Template.Spec.Containers[0].Image, obj.SinkJob.Spec.Template.Spec.Containers[0].Image
		if obj.SUTJob != nil {
			sut = obj.SUTJob.Spec.Template.Spec.Containers[0].Image
		}
		return shard, sinkImg, sut
	}
	o := Options{Name: "li", Namespace: "load", Image: "full:1", LoadImage: "lean:1", Shards: 2, Scenario: []byte(testScenario), Sink: sink}
	if shard, s, _ := images(o); shard != "lean:1" || s != "lean:1" {
		t.Errorf("shards %s, sink %s: want the load image lean:1", shard, s)
	}
	o.SUT, o.EmbedsSUT = &SUTSpec{Type: "otelcol"}, true
	if shard, s, sut := images(o); shard != "full:1" || s != "full:1" || sut != "full:1" {
		t.Errorf("a scenario embedding a system under test: shards %s, sink %s, system under test %s: want full:1 for all", shard, s, sut)
	}
	o.SUT, o.EmbedsSUT, o.LoadImage = nil, false, ""
	if shard, s, _ := images(o); shard != "full:1" || s != "full:1" {
		t.Errorf("no load image: shards %s, sink %s: want full:1", shard, s)
	}
	if DefaultLoadImage("v1.2.3") != LoadImageRepository+":v1.2.3" || DefaultLoadImage("cbd2dbd-dirty") != LoadImageRepository+":latest" {
		t.Errorf("DefaultLoadImage: %s, %s", DefaultLoadImage("v1.2.3"), DefaultLoadImage("cbd2dbd-dirty"))
	}
}
