"""Every broker setting: Kafka's key, how its value is read, Kafka's default
(or this broker's, where it says why), what it does and the type DescribeConfigs
reports for it (Kafka's; for kgroups' own keys the one their values have); and
the Kafka keys a single kgroups broker accepts but has no use for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from kgroups.config.config_types import (
    BOOLEAN,
    CLASS,
    DOUBLE,
    INT,
    LIST,
    LONG,
    PASSWORD,
    SHORT,
    STRING,
    ConfigType,
)
from kgroups.config.listeners import (
    DEFAULT_PROTOCOL_MAP,
    SECURITY_PROTOCOLS,
    listener_list,
    protocol_map,
)
from kgroups.config.sasl_listener_keys import (
    BROKER_JWT_VALIDATOR,
    DEFAULT_JWT_VALIDATOR,
    sasl_mechanisms,
)
from kgroups.config.setting_values import (
    INT_MAX,
    LONG_MAX,
    authorizer,
    boolean,
    choice,
    int_between,
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
    # Required, so that no setting goes without the type DescribeConfigs reports.
    kind: ConfigType = field(kw_only=True)


_SETTINGS: tuple[Setting, ...] = (
    Setting("broker.id", integer, 0, "Id of this broker in metadata responses.", 0, kind=INT),
    Setting("node.id", integer, None, "Alias of broker.id (KRaft name).", kind=INT),
    # Kafka's default is PLAINTEXT://:9092 (every interface); an unconfigured
    # broker here listens on loopback only, since nothing guards it.
    # listeners, advertised.listeners, log.dirs and log.dir: LIST, as Kafka
    # types them since 4.2 (KAFKA-19112; STRING before).
    Setting(
        "listeners",
        listener_list,
        "PLAINTEXT://127.0.0.1:9092",
        "Where the broker listens.",
        kind=LIST,
    ),
    Setting("advertised.listeners", listener_list, None, "Address given to clients.", kind=LIST),
    Setting(
        "sasl.enabled.mechanisms",
        sasl_mechanisms,
        "GSSAPI",
        "SASL mechanisms of SASL_* listeners (GSSAPI is accepted, not served).",
        kind=LIST,
    ),
    Setting(
        "connection.failed.authentication.delay.ms",
        integer,
        100,
        "Delay before answering a failed authentication.",
        0,
        kind=INT,
    ),
    Setting(
        "connections.max.reauth.ms",
        integer,
        0,
        "SASL session lifetime; 0: no expiry.",
        0,
        kind=LONG,
    ),
    # Not a Kafka key: a switch, so BOOLEAN.
    Setting(
        "sasl.plain.scram.credentials.enable",
        boolean,
        False,
        "PLAIN also takes the SCRAM store's users (kgroups' own key; not Kafka's behaviour).",
        kind=BOOLEAN,
    ),
    Setting(
        "sasl.oauthbearer.jwt.validator.class",
        choice(DEFAULT_JWT_VALIDATOR, BROKER_JWT_VALIDATOR),
        DEFAULT_JWT_VALIDATOR,
        "How OAuthBearerValidatorCallbackHandler checks a token (JWKS signatures).",
        kind=CLASS,
    ),
    Setting(
        "sasl.oauthbearer.jwks.endpoint.url",
        text,
        None,
        "JWKS (https:, http: or file: URL) whose keys sign OAUTHBEARER tokens.",
        kind=STRING,
    ),
    Setting(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        integer,
        3600000,
        "How often the JWKS is fetched again (0: never).",
        0,
        kind=LONG,
    ),
    Setting(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        integer,
        100,
        "First wait before fetching the JWKS again after a failure.",
        0,
        kind=LONG,
    ),
    Setting(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        integer,
        10000,
        "Longest wait between JWKS fetches after failures or unknown key ids.",
        0,
        kind=LONG,
    ),
    Setting(
        "sasl.oauthbearer.expected.audience",
        text,
        None,
        "Audiences a token's aud claim must name one of (comma-separated).",
        kind=LIST,
    ),
    Setting(
        "sasl.oauthbearer.expected.issuer",
        text,
        None,
        "Issuer a token's iss claim must equal.",
        kind=STRING,
    ),
    Setting(
        "sasl.oauthbearer.sub.claim.name", text, "sub", "Claim naming the principal.", kind=STRING
    ),
    Setting(
        "sasl.oauthbearer.scope.claim.name", text, "scope", "Claim holding the scopes.", kind=STRING
    ),
    Setting(
        "sasl.oauthbearer.clock.skew.seconds",
        integer,
        30,
        "Clock difference tolerated on exp, nbf and iat.",
        0,
        kind=INT,
    ),
    Setting(
        "sasl.server.max.receive.size",
        integer,
        524288,
        "Largest frame a SASL listener reads before authentication.",
        1,
        kind=INT,
    ),
    Setting(
        "listener.security.protocol.map",
        protocol_map,
        DEFAULT_PROTOCOL_MAP,
        "Listener name to security protocol.",
        kind=STRING,
    ),
    Setting(
        "inter.broker.listener.name",
        text,
        None,
        "Listener whose address is the main one registered in the cluster store.",
        kind=STRING,
    ),
    Setting(
        "security.inter.broker.protocol",
        choice(*SECURITY_PROTOCOLS),
        "PLAINTEXT",
        "Protocol naming the registered listener when inter.broker.listener.name is unset.",
        kind=STRING,
    ),
    Setting(
        "sasl.mechanism.inter.broker.protocol",
        text,
        "GSSAPI",
        "SASL mechanism brokers use with each other (PLAIN or SCRAM-SHA-*; GSSAPI is not served).",
        kind=STRING,
    ),
    Setting("ssl.keystore.type", text, "JKS", "Key store format (PEM only).", kind=STRING),
    Setting(
        "ssl.keystore.location",
        text,
        None,
        "PEM file: private key and certificate chain.",
        kind=STRING,
    ),
    Setting("ssl.keystore.password", text, None, "Not used with PEM key stores.", kind=PASSWORD),
    Setting("ssl.key.password", text, None, "Password of an encrypted private key.", kind=PASSWORD),
    Setting("ssl.keystore.key", text, None, "Inline PEM private key.", kind=PASSWORD),
    Setting(
        "ssl.keystore.certificate.chain", text, None, "Inline PEM certificate chain.", kind=PASSWORD
    ),
    Setting("ssl.truststore.type", text, "JKS", "Trust store format (PEM only).", kind=STRING),
    Setting(
        "ssl.truststore.location", text, None, "PEM file of trusted CA certificates.", kind=STRING
    ),
    Setting(
        "ssl.truststore.password", text, None, "Not used with PEM trust stores.", kind=PASSWORD
    ),
    Setting(
        "ssl.truststore.certificates", text, None, "Inline PEM trusted certificates.", kind=PASSWORD
    ),
    Setting(
        "ssl.client.auth",
        lower_choice("none", "requested", "required"),
        "none",
        "Ask SSL clients for a certificate.",
        kind=STRING,
    ),
    Setting(
        "ssl.enabled.protocols",
        tls_versions,
        "TLSv1.2,TLSv1.3",
        "TLS versions accepted.",
        kind=LIST,
    ),
    Setting(
        "ssl.protocol", choice("TLSv1.2", "TLSv1.3", "TLS"), "TLSv1.3", "TLS protocol.", kind=STRING
    ),
    Setting(
        "ssl.cipher.suites",
        text,
        "",
        "OpenSSL cipher list for TLS 1.2 (empty: default).",
        kind=LIST,
    ),
    Setting(
        "ssl.principal.mapping.rules",
        text,
        "DEFAULT",
        "Client certificate subject to principal name: DEFAULT and RULE:pattern/replacement/[LU].",
        kind=STRING,
    ),
    Setting(
        "ssl.endpoint.identification.algorithm",
        text,
        "https",
        "Whether brokers check each other's host names in their certificates.",
        kind=STRING,
    ),
    Setting(
        "request.timeout.ms",
        integer,
        30000,
        "How long a broker waits for another broker's answer (markers, verification).",
        1,
        kind=INT,
    ),
    Setting("log.dirs", text, "/tmp/kafka-logs", "Directory of the partition logs.", kind=LIST),
    Setting("log.dir", text, None, "Used when log.dirs is not set.", kind=LIST),
    Setting("num.partitions", integer, 1, "Partitions of an auto-created topic.", 1, kind=INT),
    Setting("default.replication.factor", integer, 1, "Replication factor (1 only).", 1, kind=INT),
    Setting(
        "auto.create.topics.enable", boolean, True, "Create topics on first use.", kind=BOOLEAN
    ),
    Setting("delete.topic.enable", boolean, True, "Allow DeleteTopics.", kind=BOOLEAN),
    Setting(
        "authorizer.class.name",
        authorizer,
        "",
        "ACL authorizer (Kafka's StandardAuthorizer or AclAuthorizer name); empty allows all.",
        kind=STRING,
    ),
    # super.users and allow.everyone.if.no.acl.found are the authorizer's, not in
    # Kafka's broker definitions: STRING (a ';'-separated text) and BOOLEAN.
    Setting(
        "super.users", text, "", "Principals allowed everything, separated by ';'.", kind=STRING
    ),
    Setting(
        "allow.everyone.if.no.acl.found",
        boolean,
        False,
        "Allow access to resources that no ACL names.",
        kind=BOOLEAN,
    ),
    Setting(
        "socket.request.max.bytes", integer, 104857600, "Largest request accepted.", 1, kind=INT
    ),
    Setting("message.max.bytes", integer, 1048588, "Largest record batch.", 0, kind=INT),
    Setting("fetch.max.bytes", integer, 57671680, "Largest fetch response.", 1024, kind=INT),
    Setting(
        "max.request.partition.size.limit",
        integer,
        2000,
        "Most partitions in a DescribeTopicPartitions response.",
        1,
        kind=INT,
    ),
    Setting(
        "connections.max.idle.ms",
        integer,
        600000,
        "Close connections idle this long.",
        1,
        kind=LONG,
    ),
    Setting("max.connections", integer, INT_MAX, "Connections the broker accepts.", 0, kind=INT),
    Setting(
        "max.connections.per.ip", integer, INT_MAX, "Connections from one address.", 0, kind=INT
    ),
    Setting(
        "max.connections.per.ip.overrides",
        ip_overrides,
        "",
        "Per-address caps, host:count,...",
        kind=STRING,
    ),
    Setting("quota.window.num", integer, 11, "Samples a client quota's rate spans.", 1, kind=INT),
    Setting(
        "quota.window.size.seconds", integer, 1, "Length of one quota sample (s).", 1, kind=INT
    ),
    Setting("log.segment.bytes", integer, 1073741824, "Segment roll size.", 14, kind=INT),
    Setting("log.roll.ms", integer, None, "Segment roll age (ms).", kind=LONG),
    Setting("log.roll.hours", integer, 168, "Segment roll age (hours).", 1, kind=INT),
    Setting("log.retention.ms", integer, None, "Retention by age (ms; -1 unlimited).", kind=LONG),
    Setting("log.retention.minutes", integer, None, "Retention by age (minutes).", kind=INT),
    Setting("log.retention.hours", integer, 168, "Retention by age (hours).", kind=INT),
    Setting("log.retention.bytes", integer, -1, "Retention by size per partition.", kind=LONG),
    Setting(
        "log.retention.check.interval.ms", integer, 300000, "Retention check period.", 1, kind=LONG
    ),
    Setting(
        "log.flush.interval.messages", integer, LONG_MAX, "fsync after this many.", 1, kind=LONG
    ),
    Setting("log.flush.interval.ms", integer, None, "fsync after this long (ms).", kind=LONG),
    Setting("log.flush.scheduler.interval.ms", integer, LONG_MAX, "Flush check period.", kind=LONG),
    Setting(
        "log.flush.offset.checkpoint.interval.ms",
        integer,
        60000,
        "Recovery point checkpoint period.",
        1,
        kind=INT,
    ),
    Setting("log.index.interval.bytes", integer, 4096, "Bytes between index entries.", 0, kind=INT),
    Setting("log.index.size.max.bytes", integer, 10485760, "Index size bound.", 4, kind=INT),
    Setting(
        "log.cleanup.policy",
        choice("delete", "compact", "compact,delete", "delete,compact"),
        "delete",
        "Default cleanup policy.",
        kind=LIST,
    ),
    Setting(
        "log.message.timestamp.type",
        choice("CreateTime", "LogAppendTime"),
        "CreateTime",
        "Timestamp kept in records.",
        kind=STRING,
    ),
    Setting(
        "log.message.timestamp.before.max.ms",
        integer,
        LONG_MAX,
        "How far in the past a CreateTime record may be (ms).",
        0,
        kind=LONG,
    ),
    Setting(
        "log.message.timestamp.after.max.ms",
        integer,
        LONG_MAX,
        "How far in the future a CreateTime record may be (ms).",
        0,
        kind=LONG,
    ),
    Setting(
        "compression.type",
        choice("uncompressed", "gzip", "snappy", "lz4", "zstd", "producer"),
        "producer",
        "Codec topics store batches in (producer: as each producer compressed it).",
        kind=STRING,
    ),
    Setting(
        "compression.gzip.level",
        int_between(1, 9, -1),
        -1,
        "gzip level of recompressed batches.",
        kind=INT,
    ),
    Setting(
        "compression.lz4.level",
        int_between(1, 17),
        9,
        "lz4 level of recompressed batches.",
        kind=INT,
    ),
    Setting(
        "compression.zstd.level",
        int_between(-131072, 22),
        3,
        "zstd level of recompressed batches.",
        kind=INT,
    ),
    Setting("log.roll.jitter.ms", integer, None, "Segment roll jitter (ms; no effect).", kind=LONG),
    Setting(
        "log.roll.jitter.hours", integer, 0, "Segment roll jitter (hours; no effect).", 0, kind=INT
    ),
    Setting(
        "log.segment.delete.delay.ms",
        integer,
        60000,
        "Delay before a deleted segment's files go (no effect: they go at once).",
        0,
        kind=LONG,
    ),
    Setting(
        "log.preallocate", boolean, False, "Preallocate segment files (no effect).", kind=BOOLEAN
    ),
    # Kerberos and the SASL login refresh: Kafka lets them change per broker;
    # kgroups serves no GSSAPI and refreshes no login, so they have no effect.
    Setting(
        "sasl.kerberos.service.name", text, "", "Kerberos service name (no effect).", kind=STRING
    ),
    Setting(
        "sasl.kerberos.kinit.cmd",
        text,
        "/usr/bin/kinit",
        "Kerberos kinit command (no effect).",
        kind=STRING,
    ),
    Setting(
        "sasl.kerberos.ticket.renew.window.factor",
        ratio,
        "0.8",
        "Kerberos ticket renewal point (no effect).",
        kind=DOUBLE,
    ),
    Setting(
        "sasl.kerberos.ticket.renew.jitter",
        ratio,
        "0.05",
        "Kerberos ticket renewal jitter (no effect).",
        kind=DOUBLE,
    ),
    Setting(
        "sasl.kerberos.min.time.before.relogin",
        integer,
        60000,
        "Kerberos relogin interval (ms; no effect).",
        kind=LONG,
    ),
    Setting(
        "sasl.kerberos.principal.to.local.rules",
        text,
        "DEFAULT",
        "Kerberos name mapping rules (no effect).",
        kind=LIST,
    ),
    Setting(
        "sasl.login.refresh.window.factor",
        ratio,
        "0.8",
        "Login refresh point (no effect).",
        kind=DOUBLE,
    ),
    Setting(
        "sasl.login.refresh.window.jitter",
        ratio,
        "0.05",
        "Login refresh jitter (no effect).",
        kind=DOUBLE,
    ),
    Setting(
        "sasl.login.refresh.min.period.seconds",
        integer,
        60,
        "Least time between login refreshes (s; no effect).",
        kind=SHORT,
    ),
    Setting(
        "sasl.login.refresh.buffer.seconds",
        integer,
        300,
        "Refresh this long before a login expires (s; no effect).",
        kind=SHORT,
    ),
    Setting(
        "log.message.downconversion.enable",
        boolean,
        True,
        "Down-conversion for old fetchers (no effect: none, as in Kafka 4).",
        kind=BOOLEAN,
    ),
    Setting(
        "log.local.retention.ms",
        integer,
        -2,
        "Tiered storage's local retention (no effect).",
        -2,
        kind=LONG,
    ),
    Setting(
        "log.local.retention.bytes",
        integer,
        -2,
        "Tiered storage's local retention (no effect).",
        -2,
        kind=LONG,
    ),
    Setting("log.cleaner.enable", boolean, True, "Run the log cleaner.", kind=BOOLEAN),
    Setting(
        "log.cleaner.backoff.ms", integer, 15000, "Pause between cleaning rounds.", 0, kind=LONG
    ),
    Setting(
        "log.cleaner.delete.retention.ms", integer, 86400000, "Tombstone retention.", 0, kind=LONG
    ),
    Setting(
        "log.cleaner.min.cleanable.ratio",
        ratio,
        "0.5",
        "Share of a log not yet cleaned that makes it worth cleaning.",
        kind=DOUBLE,
    ),
    Setting(
        "log.cleaner.min.compaction.lag.ms",
        integer,
        0,
        "Age before a record may be compacted away.",
        0,
        kind=LONG,
    ),
    Setting(
        "log.cleaner.max.compaction.lag.ms",
        integer,
        LONG_MAX,
        "Age by which a record is compacted whatever the ratio.",
        1,
        kind=LONG,
    ),
    Setting(
        "offsets.topic.num.partitions", integer, 50, "__consumer_offsets partitions.", 1, kind=INT
    ),
    Setting(
        "offsets.topic.segment.bytes",
        integer,
        104857600,
        "__consumer_offsets segment.",
        1,
        kind=INT,
    ),
    Setting(
        "offsets.retention.minutes", integer, 10080, "Committed offset retention.", 1, kind=INT
    ),
    Setting(
        "offsets.retention.check.interval.ms", integer, 600000, "Expiry check period.", 1, kind=LONG
    ),
    Setting("offset.metadata.max.bytes", integer, 4096, "Largest commit metadata.", 0, kind=INT),
    Setting(
        "producer.id.expiration.ms", integer, 86400000, "Idle producer state kept.", 1, kind=INT
    ),
    Setting(
        "transaction.partition.verification.enable",
        boolean,
        True,
        "Verify a transaction's first batch on a partition with its coordinator.",
        kind=BOOLEAN,
    ),
    Setting(
        "producer.id.expiration.check.interval.ms",
        integer,
        600000,
        "Producer expiry check period.",
        1,
        kind=INT,
    ),
    Setting(
        "offsets.commit.timeout.ms",
        integer,
        5000,
        "Wait for a coordinator append to be durable.",
        1,
        kind=INT,
    ),
    Setting(
        "transaction.state.log.num.partitions",
        integer,
        50,
        "__transaction_state partitions.",
        1,
        kind=INT,
    ),
    Setting(
        "transaction.state.log.segment.bytes",
        integer,
        104857600,
        "__transaction_state segment.",
        1,
        kind=INT,
    ),
    Setting(
        "transaction.max.timeout.ms", integer, 900000, "Largest transaction timeout.", 1, kind=INT
    ),
    Setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        integer,
        10000,
        "Check period for timed-out transactions.",
        1,
        kind=INT,
    ),
    Setting(
        "transactional.id.expiration.ms",
        integer,
        604800000,
        "Idle transactional id kept.",
        1,
        kind=INT,
    ),
    Setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        integer,
        3600000,
        "Check period for expired transactional ids.",
        1,
        kind=INT,
    ),
    Setting(
        "group.min.session.timeout.ms", integer, 6000, "Smallest session timeout.", 0, kind=INT
    ),
    Setting(
        "group.max.session.timeout.ms", integer, 1800000, "Largest session timeout.", 0, kind=INT
    ),
    Setting(
        "group.initial.rebalance.delay.ms", integer, 3000, "Delay of a first join.", 0, kind=INT
    ),
    Setting("group.max.size", integer, INT_MAX, "Members per group.", 1, kind=INT),
    Setting(
        "group.coordinator.rebalance.protocols",
        text,
        "classic,consumer,share",
        "Group protocols served: classic, consumer (KIP-848), share (KIP-932).",
        kind=LIST,
    ),
    Setting(
        "group.consumer.session.timeout.ms", integer, 45000, "Consumer group session.", 1, kind=INT
    ),
    Setting(
        "group.consumer.min.session.timeout.ms", integer, 45000, "Smallest of it.", 1, kind=INT
    ),
    Setting("group.consumer.max.session.timeout.ms", integer, 60000, "Largest of it.", 1, kind=INT),
    Setting(
        "group.consumer.heartbeat.interval.ms",
        integer,
        5000,
        "Consumer heartbeat period.",
        1,
        kind=INT,
    ),
    Setting(
        "group.consumer.min.heartbeat.interval.ms", integer, 5000, "Smallest of it.", 1, kind=INT
    ),
    Setting(
        "group.consumer.max.heartbeat.interval.ms", integer, 15000, "Largest of it.", 1, kind=INT
    ),
    Setting(
        "group.consumer.max.size", integer, INT_MAX, "Members per consumer group.", 1, kind=INT
    ),
    Setting("group.consumer.assignors", text, "uniform,range", "Server-side assignors.", kind=LIST),
    Setting(
        "group.consumer.regex.refresh.interval.ms",
        integer,
        600000,
        "Age at which a regex subscription is resolved again.",
        10000,
        kind=INT,
    ),
    Setting(
        "group.consumer.migration.policy",
        lower_choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "bidirectional",
        "Online conversion between classic and consumer groups.",
        kind=STRING,
    ),
    Setting("group.share.session.timeout.ms", integer, 45000, "Share group session.", 1, kind=INT),
    Setting("group.share.min.session.timeout.ms", integer, 45000, "Smallest of it.", 1, kind=INT),
    Setting("group.share.max.session.timeout.ms", integer, 60000, "Largest of it.", 1, kind=INT),
    Setting(
        "group.share.heartbeat.interval.ms", integer, 5000, "Share heartbeat period.", 1, kind=INT
    ),
    Setting("group.share.min.heartbeat.interval.ms", integer, 5000, "Smallest of it.", 1, kind=INT),
    Setting("group.share.max.heartbeat.interval.ms", integer, 15000, "Largest of it.", 1, kind=INT),
    Setting("group.share.max.size", integer, 200, "Members per share group.", 1, kind=INT),
    Setting(
        "group.share.record.lock.duration.ms",
        integer,
        30000,
        "Acquisition lock duration.",
        1000,
        kind=INT,
    ),
    Setting(
        "group.share.min.record.lock.duration.ms", integer, 15000, "Smallest of it.", 1000, kind=INT
    ),
    Setting(
        "group.share.max.record.lock.duration.ms", integer, 60000, "Largest of it.", 1000, kind=INT
    ),
    Setting("group.share.delivery.count.limit", integer, 5, "Deliveries of a record.", 2, kind=INT),
    Setting(
        "group.share.partition.max.record.locks",
        integer,
        2000,
        "In-flight records per share partition.",
        100,
        kind=INT,
    ),
    Setting(
        "group.share.max.share.sessions", integer, 2000, "Share sessions per broker.", 1, kind=INT
    ),
    Setting(
        "share.coordinator.state.topic.num.partitions",
        integer,
        50,
        "__share_group_state partitions.",
        1,
        kind=INT,
    ),
    Setting(
        "share.coordinator.state.topic.segment.bytes",
        integer,
        104857600,
        "__share_group_state segment.",
        1,
        kind=INT,
    ),
    Setting(
        "share.coordinator.snapshot.update.records.per.snapshot",
        integer,
        500,
        "ShareUpdate records between two ShareSnapshots of a share partition.",
        0,
        kind=INT,
    ),
    # Not a Kafka key: its URL may carry the store's password, so PASSWORD.
    Setting(
        "cluster.store.url",
        text,
        "",
        "PostgreSQL URL of the cluster (empty: one broker).",
        kind=PASSWORD,
    ),
    Setting(
        "broker.heartbeat.interval.ms", integer, 2000, "Cluster lease renewal period.", 1, kind=INT
    ),
    Setting("broker.session.timeout.ms", integer, 9000, "Cluster lease lifetime.", 1, kind=INT),
    # metrics.port and fault.admin.port are not Kafka keys: port numbers, INT.
    Setting(
        "metrics.port",
        integer,
        -1,
        "Prometheus endpoint port (-1 off, 0 any free port).",
        -1,
        kind=INT,
    ),
    Setting(
        "telemetry.max.bytes",
        integer,
        1048576,
        "Largest metrics payload a client may push (KIP-714).",
        1,
        kind=INT,
    ),
    # Not a Kafka key; an INT as Kafka's group.coordinator.append.linger.ms.
    Setting(
        "cluster.store.append.linger.ms",
        integer,
        2,
        "Wait before a coordinator's store transaction that follows another back to back.",
        0,
        kind=INT,
    ),
    Setting(
        "fault.admin.port",
        integer,
        -1,
        "Fault injection HTTP endpoint port on 127.0.0.1, for tests (-1 off, 0 any free port).",
        -1,
        kind=INT,
    ),
)

SETTINGS: dict[str, Setting] = {s.key: s for s in _SETTINGS}

# Kafka's per-listener TLS keys (listener.name.<listener>.ssl.*) name these.
LISTENER_SSL_KEYS = frozenset(key for key in SETTINGS if key.startswith("ssl."))
# And listener.name.<listener>.[oauthbearer.]sasl.oauthbearer.* these.
LISTENER_OAUTH_KEYS = frozenset(k for k in SETTINGS if k.startswith("sasl.oauthbearer."))

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

# Kafka keys a broker reads only per listener, with their types:
# listener.name.<listener>.<mechanism>.sasl.jaas.config and
# listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class.
_LISTENER_ONLY_KINDS = {"sasl.jaas.config": PASSWORD, "sasl.server.callback.handler.class": CLASS}
_LISTENER_SCOPED = re.compile(r"listener\.name\.[^.]+\.(.+)")


def setting_kind(key: str) -> ConfigType:
    """The type of broker config `key`. A per-listener key
    (``listener.name.<listener>.[<mechanism>.]<key>``) has its base key's, as
    Kafka reads it; a key no table knows is UNKNOWN."""
    scoped = _LISTENER_SCOPED.fullmatch(key)
    base = scoped.group(1) if scoped is not None else key
    for name in (base, base.partition(".")[2]):
        setting = SETTINGS.get(name)
        if setting is not None:
            return setting.kind
        if name in _LISTENER_ONLY_KINDS:
            return _LISTENER_ONLY_KINDS[name]
    return ConfigType.UNKNOWN
