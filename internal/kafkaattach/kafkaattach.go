// Package kafkaattach is how the embedded Kafka system under test
// (sut/kafka) tells a waiting kafka sink where to consume: the runner
// starts the sink before the system, so a sink without a bootstrap listens
// on Path and the system posts the brokers' addresses and the topic there
// once the topic exists. It speaks the same small JSON protocol as the
// NATS sink's attach (package natsattach): the url is the bootstrap list,
// the stream the topic.
package kafkaattach

import (
	"context"
	"io"
	"strings"

	"github.com/pipebench/pipebench/internal/natsattach"
)

// Path is where a waiting kafka sink listens.
const Path = "/pipebench/kafka-attach"

// Is reports whether endpoint is a waiting kafka sink's attach endpoint.
func Is(endpoint string) bool {
	return strings.HasPrefix(endpoint, "http://") && strings.HasSuffix(endpoint, Path)
}

// Post tells the sink at endpoint to consume topic from the brokers at
// bootstrap (host:port, comma-separated).
func Post(ctx context.Context, endpoint, bootstrap, topic string) error {
	return natsattach.Post(ctx, endpoint, natsattach.Request{URL: bootstrap, Stream: topic})
}

// Decode reads a posted request: the bootstrap list and the topic (empty
// when the system named none).
func Decode(body io.Reader) (bootstrap, topic string, err error) {
	r, err := natsattach.Decode(body)
	return r.URL, r.Stream, err
}
