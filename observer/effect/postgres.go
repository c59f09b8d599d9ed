package effect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pipebench/pipebench"
)

// PostgresConfig configures the "effect-postgres" observer: effects are rows
// a query returns.
type PostgresConfig struct {
	// URL is the database's postgres:// URL; it is never printed.
	URL pipebench.Secret `yaml:"url" json:"url"`
	// Query returns one row per effect: the sequence number, the event's
	// send time and, optionally, the effect's time (otherwise: when the
	// poll saw it). Times are timestamps or Unix times (s, ms, µs or ns).
	// Where the query says $1, it gets the highest sequence number seen so
	// far (0 at first), so each poll reads only new rows:
	//
	//	SELECT seq, sent_at, cordoned_at FROM node_status WHERE seq > $1 ORDER BY seq LIMIT 10000
	Query string `yaml:"query" json:"query"`
	// BacklogQuery, if set, returns one number: the backlog.
	BacklogQuery string             `yaml:"backlog_query" json:"backlog_query,omitempty"`
	Timeout      pipebench.Duration `yaml:"timeout" json:"timeout"`
}

// Validate reports every problem, each prefixed with its key.
func (c *PostgresConfig) Validate() error {
	var errs []error
	if u := c.URL.Reveal(); !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("url: give the database's postgres://USER:PASSWORD@HOST:PORT/DB URL (it is never printed)"))
	}
	if strings.TrimSpace(c.Query) == "" {
		errs = append(errs, errors.New("query: give a query returning seq, sent[, at] per effect"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

// PostgresFactory returns the factory of the "effect-postgres" observer.
func PostgresFactory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("effect-postgres", "poll a PostgreSQL query for events' effects: event-to-effect latency, effect rate, backlog",
		func() *PostgresConfig { return &PostgresConfig{Timeout: pipebench.Duration(5 * time.Second)} },
		func(c *PostgresConfig, _ pipebench.Env) (pipebench.Observer, error) { return NewPostgres(*c) })
}

// Postgres polls a query. Observe is called from one goroutine at a time;
// Summary and SummaryBetween may be called besides it.
type Postgres struct {
	*core
	cfg     PostgresConfig
	conn    *pgx.Conn
	cursor  bool // the query takes $1
	highest uint64
}

var _ pipebench.Observer = (*Postgres)(nil)

// NewPostgres returns an observer for cfg; it connects at the first poll.
func NewPostgres(cfg PostgresConfig) (*Postgres, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Postgres{core: newCore(), cfg: cfg, cursor: strings.Contains(cfg.Query, "$1")}, nil
}

// Observe runs the query (and the backlog query) once.
func (p *Postgres) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout.D())
	defer cancel()
	err := p.poll(ctx, at)
	var backlog *float64
	if err == nil && p.cfg.BacklogQuery != "" {
		var v float64
		if err = p.conn.QueryRow(ctx, p.cfg.BacklogQuery).Scan(&v); err == nil {
			backlog = &v
		} else {
			err = fmt.Errorf("backlog_query: %w", err)
		}
	}
	if err != nil && p.conn != nil && p.conn.IsClosed() {
		p.conn = nil // reconnect next time
	}
	return p.points(at, backlog), err
}

func (p *Postgres) poll(ctx context.Context, at time.Time) error {
	if p.conn == nil {
		conn, err := pgx.Connect(ctx, p.cfg.URL.Reveal())
		if err != nil {
			return fmt.Errorf("cannot connect to the database: %w", redact(err, p.cfg.URL.Reveal()))
		}
		p.conn = conn
	}
	var args []any
	if p.cursor {
		args = append(args, int64(p.highest))
	}
	rows, err := p.conn.Query(ctx, p.cfg.Query, args...)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	var items []item
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		if len(vals) < 2 || len(vals) > 3 {
			return fmt.Errorf("query: returns %d columns; want seq, sent and optionally at", len(vals))
		}
		seq, ok := number(sqlValue(vals[0]))
		if !ok || seq < 0 {
			continue
		}
		e := item{seq: uint64(seq)}
		e.sent, _ = timeOf(sqlValue(vals[1]))
		if len(vals) == 3 {
			e.at, _ = timeOf(sqlValue(vals[2]))
		}
		p.highest = max(p.highest, e.seq)
		items = append(items, e)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	p.record(items, at)
	return nil
}

// sqlValue turns a column value into what number and timeOf read.
func sqlValue(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case int16:
		return float64(v)
	case float32:
		return float64(v)
	case []byte:
		return string(v)
	}
	return v
}

// redact keeps the URL's password out of an error's text.
func redact(err error, url string) error {
	msg := err.Error()
	if i := strings.Index(url, "://"); i >= 0 {
		rest := url[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				if pw := rest[c+1 : at]; pw != "" {
					msg = strings.ReplaceAll(msg, pw, "***")
				}
			}
		}
	}
	return errors.New(msg)
}

// Close closes the database connection.
func (p *Postgres) Close() error {
	if p.conn != nil {
		return p.conn.Close(context.Background())
	}
	return nil
}
