package pipebench_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

type cfg struct {
	URL      string            `json:"url"`
	Token    string            `json:"token"`
	Headers  map[string]string `json:"headers"`
	Secret   pipebench.Secret  `json:"secret_header"`
	Password string            `json:"db_password"`
}

func TestPlanRedacted(t *testing.T) {
	p := pipebench.Plan{
		Target: pipebench.Component{Type: "http", Config: &cfg{
			URL: "https://alice:hunter2@gw.example:8443/events", Token: "t0k3n",
			Headers: map[string]string{"Authorization": "Bearer abc"}, Secret: "s3cr3t", Password: "pw",
		}},
		Observers: []pipebench.Component{{Type: "prometheus", Config: &cfg{URL: "http://bob:pa55@127.0.0.1:9090/metrics"}}},
	}
	b, err := json.Marshal(p.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"hunter2", "t0k3n", "Bearer abc", "s3cr3t", `"pw"`, "pa55"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("%s leaked: %s", leak, b)
		}
	}
	for _, keep := range []string{"alice:xxxxx@gw.example:8443", "bob:xxxxx@127.0.0.1:9090"} {
		if !strings.Contains(string(b), keep) {
			t.Errorf("want %s in %s", keep, b)
		}
	}
	if p.Target.Config.(*cfg).Token != "t0k3n" {
		t.Error("Redacted changed the plan the runner uses")
	}
}
