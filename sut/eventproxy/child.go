package eventproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ChildEnv names the environment variable that makes a pipebench process the
// event publisher proxy: its value is the path of the proxy's JSON spec.
const ChildEnv = "PIPEBENCH_EVENTPROXY"

// childSpec is what the parent hands the proxy's process.
type childSpec struct {
	Config  Config `json:"config"`
	NATSURL string `json:"nats_url"`
	Port    int    `json:"port"`
}

// MaybeRunChild runs the event publisher proxy and exits, if this process
// was started as the proxy (ChildEnv is set); otherwise it returns at once.
// builtins.MaybeRunChild calls it first thing in main, and test binaries
// from TestMain. In the child it is the main, so it exits the process.
func MaybeRunChild() { childproc.RunIfChild(ChildEnv, "event publisher proxy", runChild) }

func runChild(path string) error {
	var spec childSpec
	if err := childproc.ReadSpec(path, &spec); err != nil {
		return err
	}
	h, err := newHandler(spec.Config, spec.NATSURL)
	if err != nil {
		return err
	}
	defer h.close()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(spec.Port))
	if err != nil {
		return fmt.Errorf("listen for events: %w", err)
	}
	srv := &http.Server{Handler: h.mux(nil), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "event publisher proxy on %s, publishing to %s, pid %d\n", ln.Addr(), spec.NATSURL, os.Getpid())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}
