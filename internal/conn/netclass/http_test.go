package netclass

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

// Each protocol's statuses, classified: 2xx ok, 408 and 504 timeouts, its
// own refusals, any other status an error; none unreached.
func TestStatusRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rules   StatusRules
		refused []int
		errs    []int
	}{
		{"events", EventStatuses, []int{429, 503, 507}, []int{400, 404, 500, 502}},
		{"otlp", OTLPStatuses, []int{429, 502, 503}, []int{400, 500, 507}},
		{"remote write", RemoteWriteStatuses, []int{429, 500, 502, 503, 507}, []int{400, 404, 413}},
	} {
		check := func(code int, class pipebench.Class) {
			o := tc.rules.Classify(code)
			if o.Class != class || o.Code != code || o.Unreached {
				t.Errorf("%s: HTTP %d classified %+v, want %s", tc.name, code, o, class)
			}
			if class != pipebench.ClassOK && (o.Detail != strings.Fields(o.Message)[1] || !strings.HasPrefix(o.Message, "HTTP ")) {
				t.Errorf("%s: HTTP %d: detail %q, message %q", tc.name, code, o.Detail, o.Message)
			}
		}
		for _, c := range []int{200, 202, 204} {
			check(c, pipebench.ClassOK)
		}
		for _, c := range []int{408, 504} {
			check(c, pipebench.ClassTimeout)
		}
		for _, c := range tc.refused {
			check(c, pipebench.ClassRefused)
		}
		for _, c := range tc.errs {
			check(c, pipebench.ClassError)
		}
	}
}

// A plain request to a real TLS server is answered 400 "HTTP request to an
// HTTPS server": Response calls that a protocol mismatch, unreached, and
// says to use https.
func TestResponseFromATLSServerToAPlainRequest(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.StartTLS()
	defer srv.Close()
	resp, err := http.Post("http://"+srv.Listener.Addr().String()+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	o := EventStatuses.Response(resp)
	if o.Class != pipebench.ClassError || !o.Unreached || o.Detail != DetailMismatch || !strings.Contains(o.Message, "https://") {
		t.Errorf("a TLS server's answer to a plain request: %+v", o)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer plain.Close()
	if resp, err = http.Post(plain.URL, "text/plain", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if o := OTLPStatuses.Response(resp); o.Class != pipebench.ClassRefused || o.Code != 503 {
		t.Errorf("a 503: %+v", o)
	}
}
