"""Every broker setting: Kafka's key, how its value is read, Kafka's default
(or this broker's, where it says why) and what it does; and the Kafka keys a
single kgroups broker accepts but has no use for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgroups.config.listeners import (
    DEFAULT_PROTOCOL_MAP,
    SECURITY_PROTOCOLS,
    listener_list,
    protocol_map,
)
from kgroups.config.sasl_listener_keys import sasl_mechanisms
from kgroups.config.setting_values import (
    INT_MAX,
    LONG_MAX,
    authorizer,
    boolean,
    choice,
    integer,
    ip_overrides,
    lower_choice,
    ratio,
    text,
)
from kgroups.config.tls_settings import tls_versions


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    parse: Callable[[str], object]
    default: object
    doc: str
    minimum: int | None = None


_SETTINGS: tuple[Setting, ...] = (
    Setting("broker.id", integer, 0, "Id of this broker in metadata responses.", 0),
    Setting("node.id", integer, None, "Alias of broker.id (KRaft name)."),
    # Kafka's default is PLAINTEXT://:9092 (every interface); an unconfigured
    # broker here listens on loopback only, since nothing guards it.
    Setting("listeners", listener_list, "PLAINTEXT://127.0.0.1:9092", "Where the broker listens."),
    Setting("advertised.listeners", listener_list, None, "Address given to clients."),
    Setting(
        "sasl.enabled.mechanisms",
        sasl_mechanisms,
        "GSSAPI",
        "SASL mechanisms of SASL_* listeners (GSSAPI is accepted, not served).",
    ),
    Setting(
        "connection.failed.authentication.delay.ms",
        integer,
        100,
        "Delay before answering a failed authentication.",
        0,
    ),
    Setting("connections.max.reauth.ms", integer, 0, "SASL session lifetime; 0: no expiry.", 0),
    Setting(
        "sasl.plain.scram.credentials.enable",
        boolean,
        False,
        "PLAIN also takes the SCRAM store's users (kgroups' own key; not Kafka's behaviour).",
    ),
    Setting(
        "sasl.server.max.receive.size",
        integer,
        524288,
        "Largest frame a SASL listener reads before authentication.",
        1,
    ),
    Setting(
        "listener.security.protocol.map",
        protocol_map,
        DEFAULT_PROTOCOL_MAP,
        "Listener name to security protocol.",
    ),
    Setting(
        "inter.broker.listener.name",
        text,
        None,
        "Listener whose address is the main one registered in the cluster store.",
    ),
    Setting(
        "security.inter.broker.protocol",
        choice(*SECURITY_PROTOCOLS),
        "PLAINTEXT",
        "Protocol naming the registered listener when inter.broker.listener.name is unset.",
    ),
    Setting(
        "sasl.mechanism.inter.broker.protocol",
        text,
        "GSSAPI",
        "SASL mechanism brokers use with each other (PLAIN or SCRAM-SHA-*; GSSAPI is not served).",
    ),
    Setting("ssl.keystore.type", text, "JKS", "Key store format (PEM only)."),
    Setting("ssl.keystore.location", text, None, "PEM file: private key and certificate chain."),
    Setting("ssl.keystore.password", text, None, "Not used with PEM key stores."),
    Setting("ssl.key.password", text, None, "Password of an encrypted private key."),
    Setting("ssl.keystore.key", text, None, "Inline PEM private key."),
    Setting("ssl.keystore.certificate.chain", text, None, "Inline PEM certificate chain."),
    Setting("ssl.truststore.type", text, "JKS", "Trust store format (PEM only)."),
    Setting("ssl.truststore.location", text, None, "PEM file of trusted CA certificates."),
    Setting("ssl.truststore.password", text, None, "Not used with PEM trust stores."),
    Setting("ssl.truststore.certificates", text, None, "Inline PEM trusted certificates."),
    Setting(
        "ssl.client.auth",
        lower_choice("none", "requested", "required"),
        "none",
        "Ask SSL clients for a certificate.",
    ),
    Setting("ssl.enabled.protocols", tls_versions, "TLSv1.2,TLSv1.3", "TLS versions accepted."),
    Setting("ssl.protocol", choice("TLSv1.2", "TLSv1.3", "TLS"), "TLSv1.3", "TLS protocol."),
    Setting("ssl.cipher.suites", text, "", "OpenSSL cipher list for TLS 1.2 (empty: default)."),
    Setting(
        "ssl.principal.mapping.rules",
        choice("DEFAULT"),
        "DEFAULT",
        "Certificate subject to principal (DEFAULT only).",
    ),
    Setting(
        "ssl.endpoint.identification.algorithm",
        text,
        "https",
        "Whether brokers check each other's host names in their certificates.",
    ),
    Setting(
        "request.timeout.ms",
        integer,
        30000,
        "How long a broker waits for another broker's answer (markers, verification).",
        1,
    ),
    Setting("log.dirs", text, "/tmp/kafka-logs", "Directory of the partition logs."),
    Setting("log.dir", text, None, "Used when log.dirs is not set."),
    Setting("num.partitions", integer, 1, "Partitions of an auto-created topic.", 1),
    Setting("default.replication.factor", integer, 1, "Replication factor (1 only).", 1),
    Setting("auto.create.topics.enable", boolean, True, "Create topics on first use."),
    Setting("delete.topic.enable", boolean, True, "Allow DeleteTopics."),
    Setting(
        "authorizer.class.name",
        authorizer,
        "",
        "ACL authorizer (Kafka's StandardAuthorizer or AclAuthorizer name); empty allows all.",
    ),
    Setting("super.users", text, "", "Principals allowed everything, separated by ';'."),
    Setting(
        "allow.everyone.if.no.acl.found",
        boolean,
        False,
        "Allow access to resources that no ACL names.",
    ),
    Setting("socket.request.max.bytes", integer, 104857600, "Largest request accepted.", 1),
    Setting("message.max.bytes", integer, 1048588, "Largest record batch.", 0),
    Setting("fetch.max.bytes", integer, 57671680, "Largest fetch response.", 1024),
    Setting(
        "max.request.partition.size.limit",
        integer,
        2000,
        "Most partitions in a DescribeTopicPartitions response.",
        1,
    ),
    Setting("connections.max.idle.ms", integer, 600000, "Close connections idle this long.", 1),
    Setting("max.connections", integer, INT_MAX, "Connections the broker accepts.", 0),
    Setting("max.connections.per.ip", integer, INT_MAX, "Connections from one address.", 0),
    Setting(
        "max.connections.per.ip.overrides",
        ip_overrides,
        "",
        "Per-address caps, host:count,...",
    ),
    Setting("log.segment.bytes", integer, 1073741824, "Segment roll size.", 14),
    Setting("log.roll.ms", integer, None, "Segment roll age (ms)."),
    Setting("log.roll.hours", integer, 168, "Segment roll age (hours).", 1),
    Setting("log.retention.ms", integer, None, "Retention by age (ms; -1 unlimited)."),
    Setting("log.retention.minutes", integer, None, "Retention by age (minutes)."),
    Setting("log.retention.hours", integer, 168, "Retention by age (hours)."),
    Setting("log.retention.bytes", integer, -1, "Retention by size per partition."),
    Setting("log.retention.check.interval.ms", integer, 300000, "Retention check period.", 1),
    Setting("log.flush.interval.messages", integer, LONG_MAX, "fsync after this many.", 1),
    Setting("log.flush.interval.ms", integer, None, "fsync after this long (ms)."),
    Setting("log.flush.scheduler.interval.ms", integer, LONG_MAX, "Flush check period."),
    Setting(
        "log.flush.offset.checkpoint.interval.ms",
        integer,
        60000,
        "Recovery point checkpoint period.",
        1,
    ),
    Setting("log.index.interval.bytes", integer, 4096, "Bytes between index entries.", 0),
    Setting("log.index.size.max.bytes", integer, 10485760, "Index size bound.", 4),
    Setting(
        "log.cleanup.policy",
        choice("delete", "compact", "compact,delete", "delete,compact"),
        "delete",
        "Default cleanup policy.",
    ),
    Setting(
        "log.message.timestamp.type",
        choice("CreateTime", "LogAppendTime"),
        "CreateTime",
        "Timestamp kept in records.",
    ),
    Setting("log.cleaner.enable", boolean, True, "Run the log cleaner."),
    Setting("log.cleaner.backoff.ms", integer, 15000, "Pause between cleaning rounds.", 0),
    Setting("log.cleaner.delete.retention.ms", integer, 86400000, "Tombstone retention.", 0),
    Setting(
        "log.cleaner.min.cleanable.ratio",
        ratio,
        "0.5",
        "Share of a log not yet cleaned that makes it worth cleaning.",
    ),
    Setting(
        "log.cleaner.min.compaction.lag.ms",
        integer,
        0,
        "Age before a record may be compacted away.",
        0,
    ),
    Setting(
        "log.cleaner.max.compaction.lag.ms",
        integer,
        LONG_MAX,
        "Age by which a record is compacted whatever the ratio.",
        1,
    ),
    Setting("offsets.topic.num.partitions", integer, 50, "__consumer_offsets partitions.", 1),
    Setting("offsets.topic.segment.bytes", integer, 104857600, "__consumer_offsets segment.", 1),
    Setting("offsets.retention.minutes", integer, 10080, "Committed offset retention.", 1),
    Setting("offsets.retention.check.interval.ms", integer, 600000, "Expiry check period.", 1),
    Setting("offset.metadata.max.bytes", integer, 4096, "Largest commit metadata.", 0),
    Setting("producer.id.expiration.ms", integer, 86400000, "Idle producer state kept.", 1),
    Setting(
        "transaction.partition.verification.enable",
        boolean,
        True,
        "Verify a transaction's first batch on a partition with its coordinator.",
    ),
    Setting(
        "producer.id.expiration.check.interval.ms",
        integer,
        600000,
        "Producer expiry check period.",
        1,
    ),
    Setting(
        "offsets.commit.timeout.ms",
        integer,
        5000,
        "Wait for a coordinator append to be durable.",
        1,
    ),
    Setting(
        "transaction.state.log.num.partitions", integer, 50, "__transaction_state partitions.", 1
    ),
    Setting(
        "transaction.state.log.segment.bytes",
        integer,
        104857600,
        "__transaction_state segment.",
        1,
    ),
    Setting("transaction.max.timeout.ms", integer, 900000, "Largest transaction timeout.", 1),
    Setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        integer,
        10000,
        "Check period for timed-out transactions.",
        1,
    ),
    Setting("transactional.id.expiration.ms", integer, 604800000, "Idle transactional id kept.", 1),
    Setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        integer,
        3600000,
        "Check period for expired transactional ids.",
        1,
    ),
    Setting("group.min.session.timeout.ms", integer, 6000, "Smallest session timeout.", 0),
    Setting("group.max.session.timeout.ms", integer, 1800000, "Largest session timeout.", 0),
    Setting("group.initial.rebalance.delay.ms", integer, 3000, "Delay of a first join.", 0),
    Setting("group.max.size", integer, INT_MAX, "Members per group.", 1),
    Setting(
        "group.coordinator.rebalance.protocols",
        text,
        "classic,consumer,share",
        "Group protocols served: classic, consumer (KIP-848), share (KIP-932).",
    ),
    Setting("group.consumer.session.timeout.ms", integer, 45000, "Consumer group session.", 1),
    Setting("group.consumer.min.session.timeout.ms", integer, 45000, "Smallest of it.", 1),
    Setting("group.consumer.max.session.timeout.ms", integer, 60000, "Largest of it.", 1),
    Setting("group.consumer.heartbeat.interval.ms", integer, 5000, "Consumer heartbeat period.", 1),
    Setting("group.consumer.min.heartbeat.interval.ms", integer, 5000, "Smallest of it.", 1),
    Setting("group.consumer.max.heartbeat.interval.ms", integer, 15000, "Largest of it.", 1),
    Setting("group.consumer.max.size", integer, INT_MAX, "Members per consumer group.", 1),
    Setting("group.consumer.assignors", text, "uniform,range", "Server-side assignors."),
    Setting(
        "group.consumer.regex.refresh.interval.ms",
        integer,
        600000,
        "Age at which a regex subscription is resolved again.",
        10000,
    ),
    Setting(
        "group.consumer.migration.policy",
        lower_choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "bidirectional",
        "Online conversion between classic and consumer groups.",
    ),
    Setting("group.share.session.timeout.ms", integer, 45000, "Share group session.", 1),
    Setting("group.share.min.session.timeout.ms", integer, 45000, "Smallest of it.", 1),
    Setting("group.share.max.session.timeout.ms", integer, 60000, "Largest of it.", 1),
    Setting("group.share.heartbeat.interval.ms", integer, 5000, "Share heartbeat period.", 1),
    Setting("group.share.min.heartbeat.interval.ms", integer, 5000, "Smallest of it.", 1),
    Setting("group.share.max.heartbeat.interval.ms", integer, 15000, "Largest of it.", 1),
    Setting("group.share.max.size", integer, 200, "Members per share group.", 1),
    Setting(
        "group.share.record.lock.duration.ms", integer, 30000, "Acquisition lock duration.", 1000
    ),
    Setting("group.share.min.record.lock.duration.ms", integer, 15000, "Smallest of it.", 1000),
    Setting("group.share.max.record.lock.duration.ms", integer, 60000, "Largest of it.", 1000),
    Setting("group.share.delivery.count.limit", integer, 5, "Deliveries of a record.", 2),
    Setting(
        "group.share.partition.max.record.locks",
        integer,
        2000,
        "In-flight records per share partition.",
        100,
    ),
    Setting("group.share.max.share.sessions", integer, 2000, "Share sessions per broker.", 1),
    Setting(
        "share.coordinator.state.topic.num.partitions",
        integer,
        50,
        "__share_group_state partitions.",
        1,
    ),
    Setting(
        "share.coordinator.state.topic.segment.bytes",
        integer,
        104857600,
        "__share_group_state segment.",
        1,
    ),
    Setting("cluster.store.url", text, "", "PostgreSQL URL of the cluster (empty: one broker)."),
    Setting("broker.heartbeat.interval.ms", integer, 2000, "Cluster lease renewal period.", 1),
    Setting("broker.session.timeout.ms", integer, 9000, "Cluster lease lifetime.", 1),
    Setting("metrics.port", integer, -1, "Prometheus endpoint port (-1 off, 0 any free port).", -1),
    Setting(
        "fault.admin.port",
        integer,
        -1,
        "Fault injection HTTP endpoint port on 127.0.0.1, for tests (-1 off, 0 any free port).",
        -1,
    ),
)

SETTINGS: dict[str, Setting] = {s.key: s for s in _SETTINGS}

# Kafka's per-listener TLS keys (listener.name.<listener>.ssl.*) name these.
LISTENER_SSL_KEYS = frozenset(key for key in SETTINGS if key.startswith("ssl."))

# Kafka keys a single-node kgroups broker accepts but has no use for.
NO_EFFECT = frozenset(
    {
        "num.network.threads",
        "num.io.threads",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "min.insync.replicas",
        "zookeeper.connect",
        "zookeeper.connection.timeout.ms",
        "process.roles",
        "controller.quorum.voters",
        "controller.listener.names",
        "unclean.leader.election.enable",
    }
)
