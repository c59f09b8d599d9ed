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
	"strings"

	"github.com/pipebench/pipebench/internal/conn/httpserve"
	"github.com/pipebench/pipebench/internal/conn/natsattach"
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

// Listen serves a waiting kafka sink's attach endpoint on addr
// (host:port): each posted request is passed to attach with its bootstrap
// list and topic (empty when the system named none).
func Listen(addr string, attach func(ctx context.Context, bootstrap, topic string) error) (*httpserve.Server, error) {
	return natsattach.Listen(addr, Path, `post {"url": "HOST:PORT,...", "stream": "TOPIC"}`, attach)
}
