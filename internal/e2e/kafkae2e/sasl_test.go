package kafkae2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/pipebench/pipebench"
	kafkadriver "github.com/pipebench/pipebench/driver/kafka"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sut/kafka"
)

// A broker whose client listener authenticates with SASL (PLAIN and
// SCRAM-SHA-256): the driver produces with each mechanism's right
// credentials, and a wrong password fails its start as a usage error
// (exit 2) saying the brokers refused the credentials.
func TestSASL(t *testing.T) {
	kafkatest.Need(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	admin := plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()
	c, err := kafka.StartCluster(context.Background(), kafka.ClusterParams{
		Dir: t.TempDir(), Heap: "384m", JVMOpts: []string{"-XX:TieredStopAtLevel=1"}, StartTimeout: 3 * time.Minute,
		Props: map[string]string{
			"listener.security.protocol.map":                         "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
			"sasl.enabled.mechanisms":                                "PLAIN,SCRAM-SHA-256",
			"sasl.mechanism.inter.broker.protocol":                   "PLAIN",
			"listener.name.plaintext.plain.sasl.jaas.config":         jaas,
			"listener.name.plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		},
		ClientOpts: []kgo.Opt{kgo.SASL(admin)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()), kgo.SASL(admin))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secured"); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"}})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 100, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sasl kafkaclient.SASL
		ok   bool
	}{
		{kafkaclient.SASL{Mechanism: "PLAIN", User: "alice", Password: "alice-secret"}, true},
		{kafkaclient.SASL{Mechanism: "SCRAM-SHA-256", User: "bob", Password: "bob-secret"}, true},
		{kafkaclient.SASL{Mechanism: "PLAIN", User: "alice", Password: "wrong"}, false},
		{kafkaclient.SASL{Mechanism: "SCRAM-SHA-256", User: "bob", Password: "wrong"}, false},
	} {
		cfg := *kafkadriver.DefaultConfig()
		cfg.Bootstrap, cfg.Topic, cfg.SASL = c.Bootstrap(), "secured", tc.sasl
		d, err := kafkadriver.New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		err = d.Start(ctx)
		if !tc.ok {
			var pe *pipebench.Error
			if !errors.As(err, &pe) || pe.Code != pipebench.ExitUsage || !strings.Contains(pe.Msg, "refused the credentials") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("%s with a wrong password: %v", tc.sasl.Mechanism, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.sasl.Mechanism, err)
		}
		for i := 0; i < 10; i++ {
			b := g.Next(uint64(1+i), 1, time.Now())
			if o := d.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("%s: send: %+v", tc.sasl.Mechanism, o)
			}
		}
		d.Shutdown(ctx)
	}
}
