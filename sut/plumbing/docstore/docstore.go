// Package docstore runs the zero-setup document store of the health-event
// system under test: FerretDB 1.x (a MongoDB wire-protocol server written in
// Go) on SQLite files in a folder, or on a PostgreSQL database, as a child
// process of the pipebench binary on a loopback port. A child process has
// its own memory and can be restarted (as a database pod would be) without
// the service that writes to it.
//
// The child is this same binary started with ChildEnv set: cmd/pipebench
// calls MaybeRunChild first thing (through builtins.MaybeRunChild), and
// test binaries from TestMain.
package docstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	_ "modernc.org/sqlite" // IndexIDLookups opens FerretDB's SQLite files

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ChildEnv names the environment variable that makes a pipebench process the
// document store: its value is the child's Options as JSON.
const ChildEnv = "PIPEBENCH_DOCSTORE"

// FerretDBVersion is the FerretDB release embedded.
const FerretDBVersion = "1.24.2"

// Options choose the store's backend.
type Options struct {
	// PostgresURL, when set, keeps the data in that PostgreSQL database;
	// otherwise in SQLite files under the server's folder, in WAL mode with
	// synchronous=NORMAL (a commit survives the store's crash, not the
	// machine's; about 4 times the inserts per second of FULL here).
	PostgresURL string `json:"postgres_url,omitempty"`
	// Listen is the child's address (set by Start).
	Listen string `json:"listen"`
	// SQLiteDir is the SQLite folder (set by Start).
	SQLiteDir string `json:"sqlite_dir,omitempty"`
}

// MaybeRunChild runs the document store and exits, if this process was
// started as its child (ChildEnv is set); otherwise it returns at once. It
// is, in the child, the main: the one place here that exits.
func MaybeRunChild() { childproc.RunIfChild(ChildEnv, "document store", runChild) }

func runChild(v string) error {
	var o Options
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return fmt.Errorf("%s: %w", ChildEnv, err)
	}
	cfg := &ferretdb.Config{Listener: ferretdb.ListenerConfig{TCP: o.Listen},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if o.PostgresURL != "" {
		cfg.Handler, cfg.PostgreSQLURL = "postgresql", o.PostgresURL
	} else {
		cfg.Handler, cfg.SQLiteURL = "sqlite", "file:"+strings.TrimSuffix(o.SQLiteDir, "/")+"/?_pragma=synchronous(normal)"
	}
	f, err := ferretdb.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return f.Run(ctx)
}

// Server is a running document store child. Safe for concurrent use.
type Server struct {
	opts Options
	dir  string

	mu       sync.Mutex
	proc     *childproc.Proc
	restarts int
}

// Start starts the store with its files (SQLite data, log) in dir and
// returns once it accepts connections, or an error with its log.
func Start(ctx context.Context, dir string, o Options) (*Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("document store: this program (%s) cannot be started again as the store: %w", exe, err)
	}
	if o.PostgresURL == "" {
		o.SQLiteDir = filepath.Join(dir, "docstore-data")
		if err := os.MkdirAll(o.SQLiteDir, 0o755); err != nil {
			return nil, err
		}
	}
	s := &Server{opts: o, dir: dir}
	for attempt := 0; ; attempt++ {
		port, err := childproc.FreePort()
		if err != nil {
			return nil, err
		}
		s.opts.Listen = "127.0.0.1:" + strconv.Itoa(port)
		err = s.start(ctx)
		if err == nil {
			return s, nil
		}
		if attempt >= 3 || !errors.Is(err, childproc.ErrExited) || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

func (s *Server) start(ctx context.Context) error {
	spec, _ := json.Marshal(s.opts)
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(spec))
	p, err := childproc.Start("the document store (FerretDB)", cmd, filepath.Join(s.dir, "docstore.log"))
	if err != nil {
		return err
	}
	err = p.WaitReady(ctx, 30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", s.opts.Listen, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	if err != nil {
		childproc.Stop(context.Background(), p)
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// URI is the store's mongodb:// connection string.
func (s *Server) URI() string { return "mongodb://" + s.opts.Listen + "/" }

// PID is the store process's id now (it changes when it restarts).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.PID()
}

// Restart kills the store at once and starts it again on the same address
// and data, as a crashed database pod is restarted.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	p := s.proc
	s.restarts++
	s.mu.Unlock()
	p.Kill()
	return s.start(ctx)
}

// Stop ends the store (SIGTERM, then a kill), bounded by ctx.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	return childproc.Stop(ctx, p)
}

// IndexIDLookups makes FerretDB's SQLite backend find a document by _id
// through an index: FerretDB 1.24 looks _id up with the expression
// _ferretdb_sjson->'$._id', which its own _id index (on
// _ferretdb_sjson->"_id") does not match, so every update by _id scans the
// whole collection (25 ms at 5,000 documents, 170 ms at 15,000 here). This
// adds an index on that exact expression to every collection of database
// db that exists now, as a database administrator would; it changes no
// document. Call it after the collections were created. Nothing to do with
// PostgreSQL.
func (s *Server) IndexIDLookups(ctx context.Context, db string) error {
	if s.opts.PostgresURL != "" {
		return nil
	}
	conn, err := sql.Open("sqlite", "file:"+filepath.Join(s.opts.SQLiteDir, db+".sqlite")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM "_ferretdb_collections"`)
	if err != nil {
		return fmt.Errorf("document store: list %s's collections: %w", db, err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	for _, t := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, t+"_pipebench_id_lookup", t)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("document store: index %s: %w", t, err)
		}
	}
	return nil
}
