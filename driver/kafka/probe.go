package kafkadriver

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// probeClientID is the client ID of the probe's request. It ends in a
// blank line, so that a server of a line-based protocol (an HTTP server,
// which would wait for the end of its request line for ever) answers it
// too, and is told from a broker that is slow; a broker takes any client
// ID.
const probeClientID = "pipebench-probe\r\n\r\n"

// probeCorrelation is the probe request's correlation ID: a Kafka
// broker's answer starts with it.
const probeCorrelation = 0x70627072

// notKafkaAnswers tells, after no producer got an answer in time, whether
// every bootstrap address that takes a connection answers a Kafka request
// as something else does (or closes the connection): then nothing there
// is a Kafka broker. A broker that answers as one, however slowly, or an
// address that does not answer at all within a few seconds, is not said
// to be "not Kafka": a silent peer is a timeout, measured by the sends.
func (d *Driver) notKafkaAnswers(ctx context.Context) bool {
	tc, err := d.cfg.TLS.Config()
	if err != nil {
		return false
	}
	answered := false
	for _, addr := range kafkaclient.SplitAddrs(d.bootstrap) {
		switch probe(ctx, addr, tc) {
		case probeKafka, probeSilent:
			return false
		case probeOther:
			answered = true
		}
	}
	return answered
}

type probeResult int

const (
	probeNone   probeResult = iota // no connection
	probeKafka                     // a Kafka broker's answer
	probeOther                     // an answer that is not Kafka's, or a closed connection
	probeSilent                    // no answer in time
)

// probe sends one ApiVersions request (version 0) to addr and reads the
// start of its answer: a Kafka broker's is framed as Kafka frames every
// answer, a size then the request's correlation ID.
func probe(ctx context.Context, addr string, tc *tls.Config) probeResult {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := netclass.Dial(ctx, addr, tc, 2*time.Second)
	if err != nil {
		if he := (*netclass.HandshakeError)(nil); errors.As(err, &he) {
			return probeOther
		}
		return probeNone
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	req := binary.BigEndian.AppendUint32(nil, 0) // size, set below
	req = binary.BigEndian.AppendUint16(req, 18) // ApiVersions
	req = binary.BigEndian.AppendUint16(req, 0)  // version 0
	req = binary.BigEndian.AppendUint32(req, probeCorrelation)
	req = binary.BigEndian.AppendUint16(req, uint16(len(probeClientID)))
	req = append(req, probeClientID...)
	binary.BigEndian.PutUint32(req, uint32(len(req)-4))
	if _, err := c.Write(req); err != nil {
		return probeOther
	}
	var head [8]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return probeSilent
		}
		return probeOther
	}
	size := binary.BigEndian.Uint32(head[:4])
	if size < 6 || size > 1<<20 || binary.BigEndian.Uint32(head[4:]) != probeCorrelation {
		return probeOther
	}
	return probeKafka
}
