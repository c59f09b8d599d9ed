package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
)

// metadata asks the cluster for its brokers (no topics).
func metadata(ctx context.Context, cl *kgo.Client) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	return req.RequestWith(ctx, cl)
}

// Topic is a topic the SUT creates.
type Topic struct {
	// Name of the topic.
	Name string `yaml:"name" json:"name"`
	// Partitions of the topic.
	Partitions int32 `yaml:"partitions" json:"partitions"`
	// ReplicationFactor is the number of copies of each partition (at
	// most the number of brokers); 0 takes min(brokers, 3).
	ReplicationFactor int16 `yaml:"replication_factor" json:"replication_factor,omitempty"`
	// MinInsyncReplicas is the topic's min.insync.replicas: a produce
	// with acks=all is refused NOT_ENOUGH_REPLICAS when fewer replicas
	// are in sync (0 keeps the broker's default of 1).
	MinInsyncReplicas int `yaml:"min_insync_replicas" json:"min_insync_replicas,omitempty"`
	// Configs are further topic configurations (retention.ms,
	// max.message.bytes, ...).
	Configs map[string]string `yaml:"configs" json:"configs,omitempty"`
}

// CreateTopics creates the topics on the cluster at bootstrap and waits
// (bounded by ctx) until every partition has a leader. A topic that
// exists already is left as it is.
func CreateTopics(ctx context.Context, bootstrap string, brokers int, topics []Topic) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaclient.SplitAddrs(bootstrap)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range topics {
		rf := t.ReplicationFactor
		if rf == 0 {
			rf = int16(min(brokers, 3))
		}
		cfg := map[string]*string{}
		for k, v := range t.Configs {
			cfg[k] = kadm.StringPtr(v)
		}
		if t.MinInsyncReplicas > 0 {
			cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(t.MinInsyncReplicas))
		}
		for {
			resp, err := adm.CreateTopic(ctx, t.Partitions, rf, cfg, t.Name)
			if err == nil {
				err = resp.Err
			}
			if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
				break
			}
			if !kerr.IsRetriable(err) && !errors.Is(err, kerr.InvalidReplicationFactor) || ctx.Err() != nil {
				return fmt.Errorf("create topic %s (%d partitions, replication factor %d): %w", t.Name, t.Partitions, rf, err)
			}
			// A cluster just started may not have registered every
			// broker yet.
			select {
			case <-ctx.Done():
				return fmt.Errorf("create topic %s: %w", t.Name, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	for {
		md, err := adm.Metadata(ctx, names...)
		if err == nil && allLed(md, names) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the partitions of %v have no leader: %w", names, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allLed(md kadm.Metadata, names []string) bool {
	for _, n := range names {
		td, ok := md.Topics[n]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}
