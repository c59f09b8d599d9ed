package pipebench

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bench:hunter2@127.0.0.1:5432/history":                                              "postgres://bench:xxxxx@127.0.0.1:5432/history",
		"postgresql://bench:p@ss:w/rd@db.local/h?sslmode=off":                                          "postgresql://bench:xxxxx@db.local/h?sslmode=off",
		"postgres://bench@127.0.0.1/history":                                                           "postgres://bench@127.0.0.1/history",
		"postgres://%zz:hunter2@host/db":                                                               "postgres://%zz:xxxxx@host/db",
		"http://127.0.0.1:8080/v1/logs":                                                                "http://127.0.0.1:8080/v1/logs",
		"https://h/x?access_token=abc&b=1":                                                             "https://h/x?access_token=xxxxx&b=xxxxx",
		"https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4&X-Amz-Signature=abc123&X-Amz-Date=20261201": "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=xxxxx&X-Amz-Signature=xxxxx&X-Amz-Date=xxxxx",
		"https://a.blob.core.windows.net/c/b?sv=2024&sig=abc%2Bdef&se=2026":                            "https://a.blob.core.windows.net/c/b?sv=xxxxx&sig=xxxxx&se=xxxxx",
		"https://h/api/v1/query?query=up&format=json":                                                  "https://h/api/v1/query?query=up&format=json",
		"GET /upload?Signature=abc&Key-Pair-Id=K2: 403":                                                "GET /upload?Signature=xxxxx&Key-Pair-Id=xxxxx 403",
		"is it there? yes=no":                                                                          "is it there? yes=no",
		"history.db":                                                                                   "history.db",
		"nats://s3cr3t-token@127.0.0.1:4222":                                                           "nats://xxxxx@127.0.0.1:4222",
		"tls://tok@h:4443,nats://h2:4222":                                                              "tls://xxxxx@h:4443,nats://h2:4222",
		`connect "postgres://u:hunter2@127.0.0.1:1/x": refused`:                                        `connect "postgres://u:xxxxx@127.0.0.1:1/x": refused`,
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	in := []string{"pipebench", "run", "x.yaml", "--store", "postgres://u:hunter2@h/db", "--store=postgres://u:hunter2@h/db",
		"--token", "hunter2", "--password=hunter2", "-H", "Authorization: Bearer hunter2", "--header=X-Api-Key: hunter2",
		"--header", "X-Tenant: demo", "-H", "X-Honeycomb-Team: hunter2", "PB_TOKEN=hunter2", "--out", "r.json", "-q"}
	orig := slices.Clone(in)
	got := RedactArgs(in)
	if !slices.Equal(in, orig) {
		t.Fatal("RedactArgs changed its argument")
	}
	want := []string{"pipebench", "run", "x.yaml", "--store", "postgres://u:xxxxx@h/db", "--store=postgres://u:xxxxx@h/db",
		"--token", "xxxxx", "--password=xxxxx", "-H", "Authorization: xxxxx", "--header=X-Api-Key: xxxxx",
		"--header", "X-Tenant: demo", "-H", "X-Honeycomb-Team: xxxxx", "PB_TOKEN=xxxxx", "--out", "r.json", "-q"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(strings.Join(got, " "), "hunter2") {
		t.Error("a secret survived")
	}
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{"PB_TOKEN": true, "--password": true, "Authorization": true, "--api-key": true,
		"PGPASSWORD": true, "--out": false, "HOME": false, "--store": false, "X-Tenant": false} {
		if IsSecretName(name) != want {
			t.Errorf("IsSecretName(%q) = %v", name, !want)
		}
	}
}
