package natscluster

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// monitorPaths are the nats-server monitoring endpoints the front forwards.
var monitorPaths = []string{"varz", "jsz", "connz", "routez", "healthz", "raftz"}

// Front serves every node's monitoring on one loopback listener of the
// parent: GET /NODE/varz (jsz, connz, routez, healthz, raftz) is forwarded
// to that node, and GET /NODE is an empty Prometheus page, so that a node
// listed as an instance can be scraped by a Prometheus observer without an
// error and without waiting on a frozen process.
type Front struct {
	ln  net.Listener
	srv *http.Server
}

func newFront(nodes []*Node) (*Front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	tr := &http.Transport{ResponseHeaderTimeout: 10 * time.Second, MaxIdleConnsPerHost: 4}
	for _, nd := range nodes {
		target, _ := url.Parse(nd.MonitorURL())
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = tr
		rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, nd.spec.Name+" does not answer: "+err.Error(), http.StatusBadGateway)
		}
		prefix := "/" + nd.spec.Name
		mux.HandleFunc("GET "+prefix+"/{$}", emptyPage)
		mux.HandleFunc("GET "+prefix, emptyPage)
		for _, p := range monitorPaths {
			mux.Handle("GET "+prefix+"/"+p, http.StripPrefix(prefix, rp))
		}
	}
	f := &Front{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go f.srv.Serve(ln)
	return f, nil
}

// emptyPage is a Prometheus text page with no samples.
func emptyPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write([]byte("# nats-server monitoring: /varz, /jsz, /connz, /routez, /healthz\n"))
}

// URL is the base URL of node's monitoring through the front.
func (f *Front) URL(node string) string {
	return "http://" + f.ln.Addr().String() + "/" + strings.TrimPrefix(node, "/")
}

func (f *Front) close() { f.srv.Close() }
