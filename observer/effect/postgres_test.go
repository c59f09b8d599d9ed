package effect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/store/storetest"
)

// A quarantine module in the test marks queued events applied one at a time
// at a set rate in a real PostgreSQL table; the observer, polling a query,
// must see every effect, the time to apply them all, the rate and the peak
// backlog the module was set to give, within one poll interval.
func TestPostgresEffects(t *testing.T) {
	url := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	const n, rate, poll = 60, 40.0, 100 * time.Millisecond
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, `CREATE TABLE events (seq bigint PRIMARY KEY, node text, sent_at timestamptz NOT NULL, applied_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	// The blast: n events queued at once.
	sent := time.Now()
	for i := 1; i <= n; i++ {
		if _, err := db.Exec(ctx, `INSERT INTO events (seq, node, sent_at) VALUES ($1, $2, $3)`, i, "node", sent); err != nil {
			t.Fatal(err)
		}
	}
	o, err := PostgresFactory().New(&PostgresConfig{URL: pipebench.Secret(url), Timeout: pipebench.Duration(5 * time.Second),
		Query:        `SELECT seq, sent_at, applied_at FROM events WHERE applied_at IS NOT NULL AND seq > $1 ORDER BY seq`,
		BacklogQuery: `SELECT count(*) FROM events WHERE applied_at IS NULL`}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	pg := o.(*Postgres)
	defer pg.Close()
	// The module: one event every 1/rate seconds, in order.
	done := make(chan error, 1)
	go func() {
		mod, err := pgx.Connect(ctx, url)
		if err != nil {
			done <- err
			return
		}
		defer mod.Close(ctx)
		next := time.Now()
		for i := 1; i <= n; i++ {
			time.Sleep(time.Until(next))
			if _, err := mod.Exec(ctx, `UPDATE events SET applied_at = now() WHERE seq = $1`, i); err != nil {
				done <- err
				return
			}
			next = next.Add(time.Duration(float64(time.Second) / rate))
		}
		done <- nil
	}()
	peak, _ := pollEffects(t, o, n, poll)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := pg.Summary()
	want := checkSpread(t, s, n, rate)
	if peak < n-rate*poll.Seconds()*3 || peak > n {
		t.Errorf("peak backlog %g, want about %d", peak, n)
	}
	if s.Max < want-want/10 || s.NoSentTime != 0 {
		t.Errorf("latency max %v (want about %v), %d without a send time", s.Max, want, s.NoSentTime)
	}
}

func TestPostgresBadConfigAndSecret(t *testing.T) {
	_, err := PostgresFactory().New(&PostgresConfig{URL: "mysql://x"}, pipebench.Env{})
	if err == nil || !strings.Contains(testutil.ErrorText(err), "url:") || !strings.Contains(testutil.ErrorText(err), "query:") {
		t.Errorf("bad config: %v", err)
	}
	// A refused connection names no password.
	o, err := NewPostgres(PostgresConfig{URL: "postgres://u:hunter2secret@127.0.0.1:1/db", Query: "SELECT 1, 2", Timeout: pipebench.Duration(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Observe(context.Background(), time.Now())
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("connection error %v", err)
	}
}
