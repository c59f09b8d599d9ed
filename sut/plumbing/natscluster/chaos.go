package natscluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// The chaos actions.
const (
	ActionRestart  = "restart"   // kill -9, start again after For (a pod restart)
	ActionKill     = "kill"      // kill -9, stays down
	ActionFreeze   = "freeze"    // SIGSTOP for For, then SIGCONT (a hung process)
	ActionLameDuck = "lame-duck" // lame duck mode: clients told to move, then the node exits
)

// The targets a chaos event may name besides a node (nats-N) or the proxy.
const (
	TargetConsumerLeader = "consumer-leader" // the node leading the stream's consumer, found when the event fires (a replicated stream's leadership moved off it first)
	TargetStreamLeader   = "stream-leader"   // the node leading the stream
)

// Chaos is one fault in a system under test's schedule: at At (from the
// moment the system was ready, a moment before the first phase starts),
// Action is done to Target for For.
type Chaos struct {
	// At is when, measured from the moment the system under test was
	// ready; it scales with the run's --duration.
	At pipebench.Duration `yaml:"at" json:"at"`
	// Action is restart, kill, freeze or lame-duck.
	Action string `yaml:"action" json:"action"`
	// Target is a node (nats-0, nats-1, ...), consumer-leader,
	// stream-leader, or proxy (the event publisher proxy).
	Target string `yaml:"target" json:"target"`
	// For is how long a restarted node stays down (default 5s) or a frozen
	// one stays frozen (required).
	For pipebench.Duration `yaml:"for" json:"for,omitempty"`
}

// Victim is what a chaos event acts on: a node, or a proxy process.
type Victim interface {
	Name() string
	Kill() error
	Restart(ctx context.Context, timeout time.Duration) error
	Freeze() error
	Thaw() error
	LameDuck() error
}

// ValidateChaos returns one line per problem of the schedule, each
// starting "chaos: ". targets are the names a target may be besides the
// leaders.
func ValidateChaos(events []Chaos, targets []string) []error {
	var errs []error
	for i, e := range events {
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("chaos: [%d] %s", i, fmt.Sprintf(format, a...)))
		}
		if e.At < 0 {
			bad("at must be 0 or more, measured from the moment the system is ready")
		}
		switch e.Action {
		case ActionRestart, ActionKill, ActionLameDuck:
			if e.For < 0 {
				bad("for must be 0 or more")
			}
		case ActionFreeze:
			if e.For <= 0 {
				bad("a freeze needs for: how long the process stays frozen, like 20s")
			}
		default:
			bad("action %q is not restart, kill, freeze or lame-duck", e.Action)
		}
		all := append(slices.Clone(targets), TargetConsumerLeader, TargetStreamLeader)
		if !slices.Contains(all, e.Target) {
			bad("target %q is not one of %s", e.Target, strings.Join(all, ", "))
		}
	}
	return errs
}

// ScaleChaos returns the schedule with every time multiplied by f.
func ScaleChaos(events []Chaos, f float64) []Chaos {
	out := slices.Clone(events)
	for i := range out {
		out[i].At = pipebench.Duration(time.Duration(float64(out[i].At) * f).Round(time.Millisecond))
		out[i].For = pipebench.Duration(time.Duration(float64(out[i].For) * f).Round(time.Millisecond))
	}
	return out
}

// Resolver finds the victim a target names when its event fires.
type Resolver func(ctx context.Context, target string) (Victim, error)

// Schedule runs chaos events in the background. Stop ends it; a process it
// froze is thawed before Stop returns.
type Schedule struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	log    func(msg string, args ...any)
}

// RunChaos starts the schedule from now. log receives what was done and
// what failed (a failed event is logged, the run goes on).
func RunChaos(events []Chaos, resolve Resolver, restartTimeout time.Duration, log func(msg string, args ...any)) *Schedule {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Schedule{cancel: cancel, log: log, done: make(chan struct{})}
	t0 := time.Now()
	for _, e := range events {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if !sleepUntil(ctx, t0.Add(e.At.D())) {
				return
			}
			v, err := resolve(ctx, e.Target)
			if err != nil {
				s.log("chaos: cannot find the target", "target", e.Target, "action", e.Action, "err", err)
				return
			}
			s.log("chaos", "action", e.Action, "target", e.Target, "victim", v.Name(), "for", e.For.D())
			switch e.Action {
			case ActionKill:
				err = v.Kill()
			case ActionLameDuck:
				err = v.LameDuck()
			case ActionRestart:
				if err = v.Kill(); err != nil {
					break
				}
				down := e.For.D()
				if down <= 0 {
					down = 5 * time.Second
				}
				if !sleepUntil(ctx, time.Now().Add(down)) {
					return
				}
				err = v.Restart(ctx, restartTimeout)
			case ActionFreeze:
				if err = v.Freeze(); err != nil {
					break
				}
				sleepUntil(ctx, time.Now().Add(e.For.D())) // thawed also when stopped early
				err = v.Thaw()
			}
			if err != nil {
				s.log("chaos: the action failed", "action", e.Action, "target", v.Name(), "err", err)
			}
		}()
	}
	go func() { s.wg.Wait(); close(s.done) }()
	return s
}

// Done is closed once every event of the schedule was done (or Stop
// cancelled the rest).
func (s *Schedule) Done() <-chan struct{} { return s.done }

// Stop cancels the events still to come, thaws what is frozen and waits
// for the schedule's goroutines. A nil Schedule does nothing.
func (s *Schedule) Stop() {
	if s == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
