"""The broker: owns the logs, the topic registry, the group coordinator and
the listening socket, and is what every request handler talks to."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import uuid
from typing import TYPE_CHECKING

from kgroups.clock import Clock, SystemClock
from kgroups.config.broker_config import BrokerConfig, ListenerSpec, parse_ip_overrides
from kgroups.config.client_metrics import CLIENT_METRICS
from kgroups.config.dynamic_broker import BROKER
from kgroups.config.dynamic_configs import DynamicConfigs
from kgroups.config.errors import ConfigError
from kgroups.errors import ErrorCode, KafkaError
from kgroups.metrics.broker_stats import BrokerStats
from kgroups.metrics.client_telemetry import ClientTelemetry
from kgroups.metrics.http import HttpServer
from kgroups.network.connection import ConnectionState, serve_connection
from kgroups.network.request_stream import request_server
from kgroups.network.tls import peer_subject, principal_mapper, server_context
from kgroups.network.tls_server import start_tls_server
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import LogConfig
from kgroups.partitions.topic_registry import Topic, TopicRegistry
from kgroups.quotas.client_quotas import ClientQuotas
from kgroups.quotas.stored import CLIENT_QUOTAS, stored_quotas
from kgroups.runtime.coordinator_runtime import CoordinatorRuntime
from kgroups.runtime.faults import Faults
from kgroups.runtime.producer_ids import ProducerIdManager
from kgroups.runtime.share_coordinator_runtime import ShareCoordinatorRuntime
from kgroups.runtime.share_persister import SharePersister
from kgroups.runtime.share_state import ShareStateLog
from kgroups.runtime.transaction_runtime import TransactionRuntime
from kgroups.security.authorizer import parse_super_users
from kgroups.security.peer import ConnectionSecurity
from kgroups.security.settings import SaslSettings
from kgroups.security.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from kgroups.server.fault_admin import start_fault_admin
from kgroups.server.partition_homes import open_partition_home
from kgroups.share_partitions import SharePartitionConfig
from kgroups.share_partitions.manager import SharePartitionManager
from kgroups.topics.names import MAX_PARTITIONS_PER_TOPIC

if TYPE_CHECKING:
    from kgroups.handlers.marker_routes import Errors
    from kgroups.metrics.client_metric_series import ClientMetricSeries
    from kgroups.runtime.peer_brokers import PeerBrokers
    from kgroups.runtime.txn_verification import TransactionVerifier
    from kgroups.security.acl_store import DurableAuthorizer
    from kgroups.transactions.result import TxnMarkers

log = logging.getLogger(__name__)

# Kafka has no such bound; a TLS peer that stalls its handshake must not hold a socket.
SSL_HANDSHAKE_TIMEOUT_S = 10

# How long a shutdown waits for in-flight requests before cutting connections.
SHUTDOWN_GRACE_S = 5.0


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.broker_id = config.broker_id
        self.log_dir = config.log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # Groups' and brokers' dynamic configs: in a file alone, in the store in a cluster.
        alone = not config.get_str("cluster.store.url")
        self.dynamic_configs = DynamicConfigs(self.log_dir if alone else None)
        self.effective_config = config
        self.default_log_config = _default_log_config(config)
        self._take_dynamic_broker_configs()
        self.quotas = ClientQuotas(
            self.clock,
            config.get_int("quota.window.num"),
            config.get_int("quota.window.size.seconds") * 1000,
        )
        self.quotas.replace(stored_quotas(self.dynamic_configs.of_type(CLIENT_QUOTAS)))
        self.topics = TopicRegistry(self.log_dir)
        self.sasl = SaslSettings(config, self.log_dir)
        self.append_waiters = AppendWaiters()
        self.stats = BrokerStats()
        self.faults = Faults()
        # Where the partitions live: decided here, once (see partition_homes).
        self.partitions, self.cluster = open_partition_home(self)
        # Clients' pushed metrics are received only where they can be read:
        # on the Prometheus endpoint.
        self.client_telemetry = ClientTelemetry(
            self.clock, config.get_int("telemetry.max.bytes"), _telemetry_receiver(config)
        )
        self._take_client_metrics_subscriptions(
            frozenset(
                (CLIENT_METRICS, name) for name in self.dynamic_configs.of_type(CLIENT_METRICS)
            )
        )
        self.dynamic_configs.on_change(self._on_dynamic_configs)
        self.producer_ids = ProducerIdManager(
            self.log_dir, None if self.cluster is None else self.cluster.allocate_producer_ids
        )
        self.share_partitions = SharePartitionManager(
            SharePartitionConfig(
                record_lock_duration_ms=config.get_int("group.share.record.lock.duration.ms"),
                delivery_count_limit=config.get_int("group.share.delivery.count.limit"),
                max_record_locks=config.get_int("group.share.partition.max.record.locks"),
            ),
            config.get_int("group.share.max.share.sessions"),
        )
        self.share_partitions.on_available = self._share_records_available
        # The share coordinator keeps share partitions' state; this broker's
        # share partitions read and write it through the persister, in
        # process or at the broker leading the key's partition.
        self.share_coordinator = ShareCoordinatorRuntime(self)
        self.share_state = ShareStateLog(
            self, SharePersister(self, self.share_coordinator, lambda: self.peers)
        )
        self.coordinator = CoordinatorRuntime(self)
        self.txn_coordinator = TransactionRuntime(self, self._write_markers)
        # Transactional produce is verified with the id's coordinator (KIP-890),
        # which in a cluster may be another broker.
        self.transactions: TransactionVerifier | None = self.txn_coordinator
        self.peers: PeerBrokers | None = None
        if self.cluster is not None:
            # Imported for a cluster member only, as the authorizer below is for a
            # broker that has one: a test broker starts without them.
            from kgroups.runtime.peer_brokers import PeerBrokers
            from kgroups.runtime.txn_verification import ClusterVerifier
            from kgroups.server.peer_security import peer_security

            self.peers = PeerBrokers(
                self.broker_id,
                functools.partial(self.cluster.address, listener=config.inter_broker_listener()),
                peer_security(config),
                config.get_int("request.timeout.ms"),
            )
            self.transactions = ClusterVerifier(self.broker_id, self.txn_coordinator, self.peers)
        self.authorizer: DurableAuthorizer | None = None
        if config.get_str("authorizer.class.name"):
            from kgroups.security.acl_store import DurableAuthorizer

            self.authorizer = DurableAuthorizer(
                self.log_dir,
                parse_super_users(config.get_str("super.users")),
                config.get_bool("allow.everyone.if.no.acl.found"),
            )
        # Read now, so that rules that do not parse stop the broker before it listens.
        self._principal_mappers: dict[str, SslPrincipalMapper] = {
            spec.name: principal_mapper(config, spec.name)
            for spec in config.listener_specs()
            if spec.protocol == "SSL"
        }
        self.closing = False
        self.advertised_listeners = config.advertised_addresses({})
        self.advertised: tuple[str, int] = self.advertised_listeners[config.inter_broker_listener()]
        self._servers: dict[str, asyncio.Server] = {}
        self.metrics: HttpServer | None = None
        """The Prometheus endpoint, when ``metrics.port`` is set."""
        self.fault_admin: HttpServer | None = None
        """The fault injection endpoint, when ``fault.admin.port`` is set."""
        self._connections: dict[
            asyncio.Task[None], tuple[asyncio.StreamWriter, ConnectionState]
        ] = {}
        self._background: list[asyncio.Task[None]] = []
        self._per_ip: dict[str, int] = {}
        self._max_connections = config.get_int("max.connections")
        self._max_per_ip = config.get_int("max.connections.per.ip")
        self._per_ip_overrides = parse_ip_overrides(
            config.get_str("max.connections.per.ip.overrides")
        )

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Recover the logs, start listening, then load the coordinator in the background."""
        # The JWKS first: one that cannot be read stops the broker before anything opens.
        await self.sasl.oauth.start()
        await self.partitions.start()
        specs = self.config.listener_specs()
        # Bound now (the advertised port may be ephemeral), accepting once the
        # cluster is read: a client's first Metadata must list the brokers.
        for spec in specs:
            on_connection = functools.partial(self._on_connection, spec)
            host = spec.host or None
            if spec.protocol.endswith("SSL"):
                # Sends the TLS alert of a refused handshake, as a Java broker does.
                self._servers[spec.name] = await start_tls_server(
                    on_connection,
                    host,
                    spec.port,
                    server_context(self.config, spec.name),
                    SSL_HANDSHAKE_TIMEOUT_S,
                )
            else:
                self._servers[spec.name] = await request_server(on_connection, host, spec.port)
        bound = {name: self.listener_port(name) for name in self._servers}
        self.advertised_listeners = self.config.advertised_addresses(bound)
        self.advertised = self.advertised_listeners[self.config.inter_broker_listener()]
        warn_if_unguarded(self.config, specs)
        if self.cluster is not None:
            # Partition data lives in the store: no local log is opened.
            await self.cluster.start()
        # Before clients come: a test sets its faults up front.
        self.fault_admin = await start_fault_admin(self)
        for server in self._servers.values():
            await server.start_serving()
        self._background.append(asyncio.create_task(self._idle_connections_loop()))
        for loop in self.sasl.oauth.background():
            self._background.append(asyncio.create_task(loop))
        for loop in self.partitions.maintenance():
            self._background.append(asyncio.create_task(loop))
        self.coordinator.start()
        self.txn_coordinator.start()
        self.share_coordinator.start()
        if self.config.get_int("metrics.port") >= 0:
            # Imported only when enabled: its pages read the group coordinator.
            from kgroups.server.metrics_endpoint import start_metrics_server

            self.metrics = await start_metrics_server(self)
        for spec in specs:
            log.info(
                "kgroups broker %d listening on %s://%s:%d (advertised %s:%d)",
                self.broker_id,
                spec.name,
                spec.host or "0.0.0.0",
                bound[spec.name],
                *self.advertised_listeners[spec.name],
            )
        log.info("kgroups broker %d keeps its data in %s", self.broker_id, self.log_dir)

    @property
    def port(self) -> int:
        """The bound port of the first listener."""
        return self.listener_port(next(iter(self._servers)))

    def listener_port(self, name: str) -> int:
        """The bound port of a listener, by name."""
        port: int = self._servers[name].sockets[0].getsockname()[1]
        return port

    async def _write_markers(self, markers: list[TxnMarkers]) -> list[Errors]:
        # Imported at the first transaction's end (its schemas are no cost before).
        from kgroups.handlers.marker_routes import write_coordinator_markers

        return await write_coordinator_markers(self, markers)

    async def stop(self) -> None:
        """Stop accepting, answer what is in flight, flush and close every file."""
        self.closing = True
        self.faults.clear()  # delayed answers go now
        for server in self._servers.values():
            server.close()
        self.append_waiters.wake_all()
        if self.metrics is not None:
            await self.metrics.close()
        if self.fault_admin is not None:
            await self.fault_admin.close()
        await self.txn_coordinator.stop()
        await self.share_coordinator.stop()
        await self.coordinator.stop()
        # Idle connections close now; busy ones get SHUTDOWN_GRACE_S to answer.
        # Closing the transport ends a connection's task (cancelling the task
        # instead upsets asyncio's stream server).
        for writer, state in self._connections.values():
            if not state.busy:
                writer.transport.abort()
        if self._connections:
            _done, pending = await asyncio.wait(set(self._connections), timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                self._connections[task][0].transport.abort()
            if pending:
                await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_S)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.peers is not None:
            await self.peers.close()
        if self.cluster is not None:
            await self.cluster.stop()
        await self.partitions.stop()
        for server in self._servers.values():
            await server.wait_closed()
        log.info("kgroups broker %d stopped", self.broker_id)

    async def _on_connection(
        self, listener: ListenerSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else str(peer)
        count = self._per_ip.get(host, 0)
        per_ip_cap = self._per_ip_overrides.get(host, self._max_per_ip)
        if count >= per_ip_cap or len(self._connections) >= self._max_connections:
            # As Kafka: over a cap, the new connection is closed at once.
            log.info("rejected a connection from %s: too many connections", host)
            writer.transport.abort()
            return
        wait_ms = self.quotas.connection(host)
        if wait_ms:
            # As Kafka: over the address's connection_creation_rate, the
            # connection is held unserved for the throttle time, then closed,
            # so the client does not reconnect at once.
            log.debug("throttled a connection from %s for %d ms (connection quota)", host, wait_ms)
            await asyncio.sleep(wait_ms / 1000)
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        state = ConnectionState(asyncio.get_running_loop().time())
        self._connections[task] = (writer, state)
        self._per_ip[host] = count + 1
        try:
            subject = peer_subject(writer.get_extra_info("ssl_object"))
            try:
                security = ConnectionSecurity.accepted(
                    listener.name,
                    listener.protocol,
                    subject,
                    self._principal_mappers.get(listener.name),
                )
            except NoMatchingRule as e:
                # As Kafka: a certificate the rules cannot name fails authentication.
                log.info("SSL authentication from %s failed: %s", host, e)
                writer.transport.abort()
                return
            await serve_connection(self, reader, writer, state, security)
        finally:
            del self._connections[task]
            left = self._per_ip[host] - 1
            if left:
                self._per_ip[host] = left
            else:
                del self._per_ip[host]

    # -- topics and logs ---------------------------------------------------

    def topic_config(self, topic: Topic) -> LogConfig:
        return self.default_log_config.with_overrides(topic.configs)

    def plan_topic(
        self, name: str, partitions: int | None, configs: dict[str, str]
    ) -> tuple[Topic, LogConfig]:
        """Check a new topic (name, partition count, configs) without creating it."""
        count = (
            partitions
            if partitions is not None
            else self.effective_config.get_int("num.partitions")
        )
        if not 0 < count <= MAX_PARTITIONS_PER_TOPIC:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}.",
            )
        self.topics.check_new(name)
        log_config = self.default_log_config.with_overrides(configs)  # validates the values
        return Topic(name, uuid.uuid4(), count, dict(configs)), log_config

    def create_topic(self, name: str, partitions: int | None, configs: dict[str, str]) -> Topic:
        """Create a topic on the loop (requests use ``topic_changes``, off it)."""
        planned, log_config = self.plan_topic(name, partitions, configs)
        topic = self.partitions.create_topic_now(planned, log_config)
        log.info("created topic %s with %d partition(s)", name, topic.partitions)
        return topic

    def deletable_topic(self, name: str) -> Topic:
        """The topic, if a request may delete it."""
        if not self.config.get_bool("delete.topic.enable"):
            raise KafkaError(ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.")
        topic = self.topics.get(name)
        if topic is None or self.topics.is_reserved(name):
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Unknown topic {name}")
        if topic.internal:  # its coordinator's state: groups' offsets, open transactions
            raise KafkaError(
                ErrorCode.invalid_topic_exception, f"Cannot delete internal topic {name}"
            )
        return topic

    def _share_records_available(self, key: tuple[str, uuid.UUID, int]) -> None:
        """Share fetches waiting on the partition look again."""
        topic = self.topics.by_id(key[1])
        if topic is not None:
            self.append_waiters.notify(topic.name, key[2])

    def on_topic_gone(self, name: str) -> None:
        self.coordinator.on_topic_deleted(name)
        self.share_partitions.drop_topics(lambda topic_id: self.topics.by_id(topic_id) is not None)
        log.info("topic %s was deleted", name)

    # -- dynamic broker configs (KIP-226) ----------------------------------

    def _on_dynamic_configs(self, changed: frozenset[tuple[int, str]]) -> None:
        if any(rtype == CLIENT_QUOTAS for rtype, _ in changed):
            self.quotas.replace(stored_quotas(self.dynamic_configs.of_type(CLIENT_QUOTAS)))
        self._take_client_metrics_subscriptions(changed)
        if changed.isdisjoint({(BROKER, ""), (BROKER, str(self.broker_id))}):
            return
        self._take_dynamic_broker_configs()
        # Every topic's logs here take the new defaults under their overrides.
        self.partitions.reconfigure({t.name: self.topic_config(t) for t in self.topics})

    def _take_client_metrics_subscriptions(self, changed: frozenset[tuple[int, str]]) -> None:
        for rtype, name in sorted(changed):
            if rtype != CLIENT_METRICS:
                continue
            configs = self.dynamic_configs.get(CLIENT_METRICS, name)
            try:
                self.client_telemetry.update_subscription(name, configs)
            except KafkaError as e:  # checked when it was written
                log.error("client metrics subscription %s %s not applied: %s", name, configs, e)

    def _take_dynamic_broker_configs(self) -> None:
        layers = (
            self.dynamic_configs.get(BROKER, ""),
            self.dynamic_configs.get(BROKER, str(self.broker_id)),
        )
        try:
            self.effective_config = self.config.with_dynamic(*layers)
            self.default_log_config = _default_log_config(self.effective_config)
        except (ConfigError, KafkaError) as e:  # each layer was checked with the other as it was
            log.error("dynamic broker configs %s not applied: %s", layers, e)

    # -- background work ---------------------------------------------------

    async def _idle_connections_loop(self) -> None:
        """Close connections that neither sent a whole request nor were answered
        for `connections.max.idle.ms`."""
        loop = asyncio.get_running_loop()
        idle = self.config.get_int("connections.max.idle.ms") / 1000
        while True:
            await asyncio.sleep(min(idle / 4, 1.0))
            cutoff = loop.time() - idle
            for writer, state in list(self._connections.values()):
                if not state.busy and state.last_active < cutoff:
                    writer.transport.abort()


def warn_if_unguarded(config: BrokerConfig, specs: list[ListenerSpec]) -> None:
    """A PLAINTEXT listener open beyond this machine, with no authorizer, lets
    anyone on the network read and write everything: say so at start."""
    if config.get_str("authorizer.class.name"):
        return
    for spec in specs:
        if spec.protocol == "PLAINTEXT" and not _is_loopback(spec.host):
            log.warning(
                "listener %s (%s:%d) accepts unauthenticated connections from the network "
                "and no authorizer is set (authorizer.class.name): any client may read and "
                "write every topic",
                spec.name,
                spec.host or "0.0.0.0",
                spec.port,
            )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # empty (every interface) or a host name


def _telemetry_receiver(config: BrokerConfig) -> ClientMetricSeries | None:
    if config.get_int("metrics.port") < 0:
        return None
    from kgroups.metrics.client_metric_series import ClientMetricSeries

    return ClientMetricSeries()


def _default_log_config(config: BrokerConfig) -> LogConfig:
    return LogConfig(
        segment_bytes=config.get_int("log.segment.bytes"),
        segment_ms=config.log_roll_ms,
        segment_jitter_ms=config.log_roll_jitter_ms,
        retention_ms=config.log_retention_ms,
        retention_bytes=config.get_int("log.retention.bytes"),
        index_interval_bytes=config.get_int("log.index.interval.bytes"),
        segment_index_bytes=config.get_int("log.index.size.max.bytes"),
        flush_messages=config.get_int("log.flush.interval.messages"),
        flush_ms=config.log_flush_interval_ms,
        cleanup_policy=config.get_str("log.cleanup.policy"),
        message_timestamp_type=config.get_str("log.message.timestamp.type"),
        max_message_bytes=config.get_int("message.max.bytes"),
        delete_retention_ms=config.get_int("log.cleaner.delete.retention.ms"),
    ).with_overrides(
        {
            "min.cleanable.dirty.ratio": config.get_str("log.cleaner.min.cleanable.ratio"),
            "min.compaction.lag.ms": str(config.get_int("log.cleaner.min.compaction.lag.ms")),
            "max.compaction.lag.ms": str(config.get_int("log.cleaner.max.compaction.lag.ms")),
            **{
                topic_key: _setting_text(config.get(broker_key))
                for topic_key, broker_key in _MORE_TOPIC_DEFAULTS.items()
                if config.get(broker_key) is not None
            },
            **_no_effect_topic_defaults(config),
        }
    )


def _no_effect_topic_defaults(config: BrokerConfig) -> dict[str, str]:
    """Keys a broker accepts with no effect that are topic configs' defaults
    too (min.insync.replicas...): topics describe them as Kafka would, a
    value Kafka would refuse left out, as the broker ignores it."""
    out = {}
    for key in ("min.insync.replicas", "unclean.leader.election.enable"):
        raw = config.props.get(key)
        if raw is None:
            continue
        try:
            LogConfig().with_overrides({key: raw})
        except KafkaError:
            continue
        out[key] = raw
    return out


# Topic configs whose broker default has the topic's name or one of its own.
_MORE_TOPIC_DEFAULTS = {
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "preallocate": "log.preallocate",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "local.retention.ms": "log.local.retention.ms",
    "local.retention.bytes": "log.local.retention.bytes",
}


def _setting_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
