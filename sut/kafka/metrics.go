package kafka

import "path/filepath"

// exporterJar is the Prometheus JMX exporter's agent jar among the libs
// (sut/kafka/pom.xml fetches it with the Kafka jars), or "".
func exporterJar(libs string) string {
	m, _ := filepath.Glob(filepath.Join(libs, "jmx_prometheus_javaagent-*.jar"))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// exporterConfig is the JMX exporter's configuration: the broker MBeans a
// load test reads, under Prometheus names, besides the JVM's own metrics
// the agent always serves (jvm_memory_*, process_cpu_seconds_total,
// process_resident_memory_bytes).
//
//   - kafka_server_{messages_in,bytes_in,bytes_out,bytes_rejected,
//     total_produce_requests,failed_produce_requests,total_fetch_requests,
//     failed_fetch_requests}_total: BrokerTopicMetrics over all topics,
//     counted by the broker as it appends and serves (messages_in counts
//     records, not batches; bytes_out includes replication fetches of
//     followers only in replication_bytes_out);
//   - kafka_server_topic_{messages_in,bytes_in,bytes_out}_total{topic}:
//     the same for each topic;
//   - kafka_server_replication_bytes_{in,out}_total;
//   - kafka_server_{under_replicated_partitions,under_min_isr_partitions,
//     offline_replicas,partitions,leaders}: ReplicaManager gauges;
//   - kafka_network_request_queue_size: requests waiting for a handler
//     thread;
//   - kafka_network_request_time_ms{request,quantile}: the broker's
//     TotalTimeMs of Produce, Fetch (replication) and FetchConsumer
//     requests, from receipt to response sent, as percentiles of its own
//     histogram (a decaying reservoir of about the last five minutes), and
//     kafka_network_requests_total{request} their count.
const exporterConfig = `lowercaseOutputName: true
lowercaseOutputLabelNames: true
includeObjectNames:
  - "kafka.server:type=BrokerTopicMetrics,*"
  - "kafka.server:type=ReplicaManager,*"
  - "kafka.network:type=RequestChannel,name=RequestQueueSize"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,*"
rules:
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec><>Count'
    name: kafka_server_messages_in_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec><>Count'
    name: kafka_server_bytes_in_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec><>Count'
    name: kafka_server_bytes_out_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=BytesRejectedPerSec><>Count'
    name: kafka_server_bytes_rejected_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=ReplicationBytesInPerSec><>Count'
    name: kafka_server_replication_bytes_in_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=ReplicationBytesOutPerSec><>Count'
    name: kafka_server_replication_bytes_out_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=TotalProduceRequestsPerSec><>Count'
    name: kafka_server_total_produce_requests_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=FailedProduceRequestsPerSec><>Count'
    name: kafka_server_failed_produce_requests_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=TotalFetchRequestsPerSec><>Count'
    name: kafka_server_total_fetch_requests_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=FailedFetchRequestsPerSec><>Count'
    name: kafka_server_failed_fetch_requests_total
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=(.+)><>Count'
    name: kafka_server_topic_messages_in_total
    labels:
      topic: "$1"
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=(.+)><>Count'
    name: kafka_server_topic_bytes_in_total
    labels:
      topic: "$1"
    type: COUNTER
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec, topic=(.+)><>Count'
    name: kafka_server_topic_bytes_out_total
    labels:
      topic: "$1"
    type: COUNTER
  - pattern: 'kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value'
    name: kafka_server_under_replicated_partitions
    type: GAUGE
  - pattern: 'kafka.server<type=ReplicaManager, name=UnderMinIsrPartitionCount><>Value'
    name: kafka_server_under_min_isr_partitions
    type: GAUGE
  - pattern: 'kafka.server<type=ReplicaManager, name=OfflineReplicaCount><>Value'
    name: kafka_server_offline_replicas
    type: GAUGE
  - pattern: 'kafka.server<type=ReplicaManager, name=PartitionCount><>Value'
    name: kafka_server_partitions
    type: GAUGE
  - pattern: 'kafka.server<type=ReplicaManager, name=LeaderCount><>Value'
    name: kafka_server_leaders
    type: GAUGE
  - pattern: 'kafka.network<type=RequestChannel, name=RequestQueueSize><>Value'
    name: kafka_network_request_queue_size
    type: GAUGE
  - pattern: 'kafka.network<type=RequestMetrics, name=TotalTimeMs, request=(Produce|Fetch|FetchConsumer)><>(50|75|95|99|999)thPercentile'
    name: kafka_network_request_time_ms
    labels:
      request: "$1"
      quantile: "0.$2"
    type: GAUGE
  - pattern: 'kafka.network<type=RequestMetrics, name=TotalTimeMs, request=(Produce|Fetch|FetchConsumer)><>Count'
    name: kafka_network_requests_total
    labels:
      request: "$1"
    type: COUNTER
`
