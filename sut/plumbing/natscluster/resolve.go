package natscluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// Resolver returns the resolver of chaos targets for the cluster: a node by
// name, or the node leading stream (stream-leader) or its first consumer
// (consumer-leader) when the event fires; names in others (the proxy) are
// looked up there. A consumer's node that also leads a replicated stream
// hands the stream's leadership to another node first, so that the event
// hits the consumer alone.
func (c *Cluster) Resolver(stream string, others map[string]Victim) Resolver {
	return func(ctx context.Context, target string) (Victim, error) {
		if v, ok := others[target]; ok {
			return v, nil
		}
		if target == TargetStreamLeader || target == TargetConsumerLeader {
			name, err := c.leader(ctx, stream, target == TargetConsumerLeader)
			if err != nil {
				return nil, err
			}
			target = name
		}
		if nd := c.Node(target); nd != nil {
			return nd, nil
		}
		return nil, fmt.Errorf("no node %q", target)
	}
}

// leader asks the JetStream API which node leads stream, or its first
// consumer.
func (c *Cluster) leader(ctx context.Context, stream string, consumer bool) (string, error) {
	nc, err := nats.Connect(c.ClientURL(), nats.Name("pipebench-chaos"), nats.Timeout(2*time.Second))
	if err != nil {
		return "", err
	}
	defer nc.Close()
	j, err := js.New(nc)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second) // a stepdown's election included
	defer cancel()
	st, err := j.Stream(cctx, stream)
	if err != nil {
		return "", fmt.Errorf("stream %s: %w", stream, err)
	}
	if !consumer {
		info, err := st.Info(cctx)
		if err != nil {
			return "", err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return "", fmt.Errorf("stream %s has no leader", stream)
		}
		return info.Cluster.Leader, nil
	}
	lister := st.ListConsumers(cctx)
	for ci := range lister.Info() {
		if ci.Cluster != nil && ci.Cluster.Leader != "" {
			return ci.Cluster.Leader, moveStreamFrom(cctx, nc, st, ci.Cluster.Leader)
		}
	}
	if err := lister.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("stream %s has no consumer with a leader", stream)
}

// moveStreamFrom asks the stream's leader to step down when it is node,
// and waits (bounded by ctx) until another node leads it: a consumer's
// node that also leads its stream would, hung or killed, stop the stream
// accepting too, and the event is about the consumer (F3: JetStream
// accepts but dispatches nothing). A stream of one replica stays.
func moveStreamFrom(ctx context.Context, nc *nats.Conn, st js.Stream, node string) error {
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	if info.Cluster == nil || info.Cluster.Leader != node || len(info.Cluster.Replicas) == 0 {
		return nil
	}
	if _, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+info.Config.Name, nil); err != nil {
		return fmt.Errorf("move stream %s's leadership off %s: %w", info.Config.Name, node, err)
	}
	for ctx.Err() == nil {
		if info, err := st.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != node {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("stream %s: still led by %s after a stepdown: %w", info.Config.Name, node, ctx.Err())
}

// CreateStream connects to url and creates (or updates) the stream,
// retrying until deadline while a cluster elects its leaders, then waits
// until the stream has a leader, so that the first publish is answered.
func CreateStream(ctx context.Context, url string, spec js.StreamConfig, deadline time.Time) error {
	nc, err := nats.Connect(url, nats.Name("pipebench-setup"), nats.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("connect to the embedded nats-server: %w", err)
	}
	defer nc.Close()
	j, err := js.New(nc)
	if err != nil {
		return err
	}
	var last error
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var st js.Stream
		st, last = j.CreateOrUpdateStream(cctx, spec)
		if last == nil {
			var info *js.StreamInfo
			info, last = st.Info(cctx)
			if last == nil && (info.Cluster == nil || info.Cluster.Leader != "") {
				cancel()
				return nil
			}
			if last == nil {
				last = fmt.Errorf("the stream has no leader yet")
			}
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("create stream %s: %w", spec.Name, last)
}

// Stream says what a system under test's stream is, as its scenario
// section writes it.
type Stream struct {
	Name     string
	Subjects []string
	// MaxBytes, MaxMsgs: 0 is no limit.
	MaxBytes, MaxMsgs int64
	Discard           string // old, new
	Storage           string // file, memory
	Retention         string // limits, interest, workqueue
	Replicas          int
	// Placement is the node a stream of one replica goes to (by the tag
	// NodeTag puts on every node), empty for the cluster's choice.
	Placement string
}

// NodeTag is the server tag every node carries, which a stream's
// placement asks for: node:nats-0, ...
func NodeTag(node string) string { return "node:" + node }

// Spec returns the JetStream configuration of the stream.
func (s Stream) Spec() js.StreamConfig {
	sc := js.StreamConfig{Name: s.Name, Subjects: s.Subjects, MaxBytes: -1, MaxMsgs: -1,
		Replicas: max(s.Replicas, 1), Storage: js.FileStorage, Discard: js.DiscardOld}
	if s.MaxBytes > 0 {
		sc.MaxBytes = s.MaxBytes
	}
	if s.MaxMsgs > 0 {
		sc.MaxMsgs = s.MaxMsgs
	}
	if s.Storage == "memory" {
		sc.Storage = js.MemoryStorage
	}
	if s.Discard == "new" {
		sc.Discard = js.DiscardNew
	}
	switch s.Retention {
	case "interest":
		sc.Retention = js.InterestPolicy
	case "workqueue":
		sc.Retention = js.WorkQueuePolicy
	}
	if s.Placement != "" {
		sc.Placement = &js.Placement{Tags: []string{NodeTag(s.Placement)}}
	}
	return sc
}
