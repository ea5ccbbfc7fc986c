"""A broker as a member of a cluster kept in PostgreSQL (``cluster.store.url``).

Every ``broker.heartbeat.interval.ms`` (and sooner when a request finds the
broker's view stale) one background turn, on the control connection:
renews the lease (or registers again once it is lost), runs the election
(moving live partitions too when the set of live brokers changed), and reads
the leaders, the live brokers and the topics. The broker then serves from that
view: Metadata lists the live brokers and each partition's leader, and the
store's partition home (kgroups.postgres_store.home), told after every turn
what this incarnation leads, serves those partitions; the others answer
NOT_LEADER_OR_FOLLOWER. The lease is trusted only as ``LeaseState`` says: past
its validity, the broker leads nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Protocol

from kgroups.clock import Clock, MonotonicClock
from kgroups.cluster.broker_leases import live_brokers, register, renew
from kgroups.cluster.cluster_view import ClusterView
from kgroups.cluster.leadership import (
    PartitionLeader,
    elect_leaders,
    hand_over,
    partition_leaders,
    surplus,
)
from kgroups.cluster.lease_state import LeaderView, LeaseState
from kgroups.cluster.live_brokers import LiveBrokers
from kgroups.cluster.store_queries import create_all, grow_topic, read_cluster_id
from kgroups.config.broker_config import BrokerConfig
from kgroups.config.dynamic_configs import DynamicConfigs, Plan
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.topic_registry import Topic, TopicRegistry
from kgroups.postgres_store.configs import alter_configs, read_configs
from kgroups.postgres_store.errors import DuplicateBroker, LeaseExpired, StoreUnavailable
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.gained import read_gained
from kgroups.postgres_store.home import StoreHome
from kgroups.postgres_store.producer_ids import allocate_producer_ids
from kgroups.postgres_store.reads import partition_offsets
from kgroups.postgres_store.schema import SCHEMA_VERSION, ensure_schema
from kgroups.postgres_store.security import (
    Security,
    add_acls,
    alter_credentials,
    delete_acls,
    read_security,
)
from kgroups.postgres_store.store import Store, ending_stalled_transactions
from kgroups.postgres_store.thread import StoreThread
from kgroups.postgres_store.topics import alter_topic_configs, delete_topic, list_topics
from kgroups.security.authorizer import AclBinding, AclFilter, Authorizer
from kgroups.security.scram import ScramCredential
from kgroups.security.settings import SaslSettings

log = logging.getLogger(__name__)


class ClusterHost(Protocol):
    """What a cluster member uses of its broker (BrokerCore has it all)."""

    config: BrokerConfig
    clock: Clock
    broker_id: int
    advertised: tuple[str, int]
    advertised_listeners: dict[str, tuple[str, int]]
    topics: TopicRegistry
    append_waiters: AppendWaiters
    sasl: SaslSettings
    dynamic_configs: DynamicConfigs

    @property
    def authorizer(self) -> Authorizer | None: ...

    def topic_config(self, topic: Topic) -> LogConfig: ...

    def on_topic_gone(self, name: str) -> None: ...


TopicPartition = tuple[str, int]

_MIN_TURN_SPACING_S = 0.1
# Between attempts to reach the store at start: doubling up to the maximum.
_START_BACKOFF_S = 0.5
_START_BACKOFF_MAX_S = 5.0


class ClusterMember:
    def __init__(self, broker: ClusterHost, url: str) -> None:
        self._broker = broker
        config = broker.config
        self.heartbeat_ms = config.get_int("broker.heartbeat.interval.ms")
        self.session_timeout_ms = config.get_int("broker.session.timeout.ms")
        self.live = LiveBrokers(
            (spec.name for spec in config.listener_specs()), config.inter_broker_listener()
        )
        self.lease = LeaseState(
            broker.broker_id,
            MonotonicClock(),
            heartbeat_interval_ms=self.heartbeat_ms,
            session_timeout_ms=self.session_timeout_ms,
        )
        self._incarnation = uuid.uuid4()
        # Well within the session timeout, so that a broker waiting on a paused
        # one's row locks still renews its own lease in time.
        url = ending_stalled_transactions(url, self.session_timeout_ms // 3)
        self._control = StoreThread(url, "kgroups-store-control")
        self.home = StoreHome(
            url,
            broker.broker_id,
            self,
            broker.append_waiters,
            broker.clock,
            producer_expiration_ms=config.get_int("producer.id.expiration.ms"),
            retention_check_ms=config.get_int("log.retention.check.interval.ms"),
            append_linger_ms=config.get_int("cluster.store.append.linger.ms"),
            cleaner_backoff_ms=(
                config.get_int("log.cleaner.backoff.ms")
                if config.get_bool("log.cleaner.enable")
                else None
            ),
        )
        self.leaders: dict[TopicPartition, PartitionLeader] = {}
        self._turn_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_error_log = 0.0
        self._move_live = True  # a broker that joins evens the spread
        # Fires when the lease can no longer be vouched for (see _arm_step_down).
        self._step_down: asyncio.TimerHandle | None = None
        self._security_version: int | None = None
        # Topics this broker made while a read of the store was out: that read
        # may not show them, and must not make them look deleted.
        self._made_during_read: dict[str, Topic] = {}

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Create the tables if needed, register and read the cluster once.
        A store that cannot be reached is waited for, as a Kafka broker waits
        for its controllers: a store restarting or failing over, or one
        stalled for a moment, must not leave a broker down for good."""
        backoff_s = _START_BACKOFF_S
        while True:
            try:
                found = await self._control.run(ensure_schema)
                cluster_id = await self._control.run(read_cluster_id)
                self._broker.topics.cluster_id = cluster_id
                self._broker.topics.mirror(())  # the store's topics, not the local registry's
                await self._read_security()  # the store's ACLs and users, not the data dir's
                break
            except StoreUnavailable as e:
                log.warning("cluster store unavailable at start (%s); trying again", e)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, _START_BACKOFF_MAX_S)
        log.info(
            "cluster store schema version %d (found %d), cluster id %s",
            SCHEMA_VERSION,
            found,
            cluster_id,
        )
        await self._turn()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Controlled shutdown: commit what was appended, hand the partitions
        over, then close (the home drops its logs at its own stop)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._step_down is not None:
            self._step_down.cancel()
        await self.home.flush()
        epoch = self.lease.lease_epoch
        if epoch is not None:
            try:
                await self._control.run(lambda s: hand_over(s, self._broker.broker_id, epoch))
                log.info("handed over the partitions of broker %d", self._broker.broker_id)
            except KafkaError as e:
                log.warning("controlled shutdown could not hand over: %s", e)
        self.home.drop(list(self.home.logs), ErrorCode.not_leader_or_follower)
        await asyncio.to_thread(self._control.close)

    def poke(self) -> None:
        """Read the cluster again soon: a request found this broker's view stale."""
        self._wake.set()

    async def refresh(self) -> None:
        """Read the cluster now (a Metadata request for a topic not known here)."""
        await self._turn(renew_due_only=True)

    # -- the background turn -----------------------------------------------------

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.heartbeat_ms / 1000)
            self._wake.clear()
            try:
                await self._turn(renew_due_only=True)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("cluster turn failed")
            # Requests that find the view stale wake the loop; a burst of them
            # costs one turn per interval here, not one each.
            await asyncio.sleep(_MIN_TURN_SPACING_S)

    async def _turn(self, *, renew_due_only: bool = False) -> None:
        async with self._turn_lock:
            try:
                if not await self._keep_lease(renew_due_only):
                    return
                give_away = await self._let_go_of_surplus() if self._move_live else frozenset()
                held = self.home.held()
                known = self._security_version
                self._made_during_read.clear()  # what was made before, this read shows
                read_from = self.home.writer.mark()
                view = await self._control.run(lambda s: self._read(s, give_away, held, known))
            except StoreUnavailable as e:
                self._log_unavailable(e)
                return
            self._apply(view, read_from)

    async def _keep_lease(self, renew_due_only: bool) -> bool:
        lease = self.lease
        broker_id = self._broker.broker_id
        if lease.lease_epoch is None:
            host, port = self._broker.advertised
            listeners = {
                name: f"{h}:{p}" for name, (h, p) in self._broker.advertised_listeners.items()
            }
            sent = lease.renew_sent()
            try:
                epoch = await self._control.run(
                    lambda s: register(
                        s,
                        broker_id,
                        f"{host}:{port}",
                        self.session_timeout_ms,
                        incarnation=self._incarnation,
                        listeners=listeners,
                    )
                )
            except DuplicateBroker as e:
                self._log_unavailable(e)
                return False
            lease.registered(epoch, sent)
            self._arm_step_down()
            self._move_live = True
            log.info("broker %d registered with lease epoch %d", broker_id, epoch)
            return True
        if renew_due_only and not lease.renew_due():
            return True
        epoch = lease.lease_epoch
        sent = lease.renew_sent()
        try:
            await self._control.run(lambda s: renew(s, broker_id, epoch, self.session_timeout_ms))
        except LeaseExpired:
            log.warning("broker %d lost its lease (epoch %d); registering again", broker_id, epoch)
            lease.lease_lost()
            self._apply_leading()
            self._wake.set()
            return False
        lease.renewed(sent)
        self._arm_step_down()
        return True

    async def _let_go_of_surplus(self) -> frozenset[TopicPartition]:
        """The partitions this broker is to give away to even the spread, once
        it has stopped serving them (the give-away is in this turn's read)."""
        broker_id = self._broker.broker_id
        give_away = await self._control.run(lambda s: surplus(s, broker_id))
        if give_away:
            self.home.release(give_away)
        return give_away

    def _read(
        self,
        store: Store,
        give_away: frozenset[TopicPartition],
        held: set[TopicPartition],
        known: int | None,
    ) -> ClusterView:
        elect_leaders(store, giver=self._broker.broker_id, give_away=give_away)
        leaders = partition_leaders(store)
        epoch = self.lease.lease_epoch
        ends: dict[TopicPartition, tuple[int, int]] = {}
        producers: dict[TopicPartition, ProducerStateManager] = {}
        if epoch is not None:
            ends, producers = read_gained(store, self._broker.broker_id, epoch, held)
        security = read_security(store, known)
        topics, configs = list_topics(store), read_configs(store)
        return ClusterView(leaders, live_brokers(store), topics, ends, producers, security, configs)

    def _apply(self, view: ClusterView, read_from: int) -> None:
        before = self.live.ids
        self.live.observe(view.live)
        if self.live.ids != before:
            self._move_live = True  # the next turn evens the spread
            self._wake.set()
        else:
            self._move_live = False
        self.leaders = {(p.topic, p.partition): p for p in view.leaders}
        topics = {t.name: t for t in view.topics}
        for name, topic in self._made_during_read.items():
            topics.setdefault(name, topic)
        self._made_during_read.clear()
        gone = self._broker.topics.mirror(topics.values())
        self._broker.dynamic_configs.replace(view.configs)  # before the logs' configs
        self.lease.observe(
            LeaderView(p.topic, p.partition, p.leader_id, p.leader_lease_epoch, p.leader_epoch)
            for p in view.leaders
        )
        self._apply_leading(view.ends, view.producers, read_from)
        if view.security is not None:
            self._apply_security(view.security)
        for name in gone:
            self._broker.on_topic_gone(name)

    def _apply_security(self, security: Security) -> None:
        known = self._security_version
        if known is not None and security.version < known:
            return  # read before a change this broker has applied already
        if self._broker.authorizer is not None:
            self._broker.authorizer.replace(security.acls)
        self._broker.sasl.credentials.replace(security.credentials)
        self._security_version = security.version

    def _arm_step_down(self) -> None:
        """Step down at the instant the lease can no longer be vouched for
        (last acknowledged renewal sent + session timeout - margin), whether or
        not a turn is running: a renewal stuck on a cut connection must not keep
        this broker answering as a leader and coordinator."""
        if self._step_down is not None:
            self._step_down.cancel()
        delay_ms = max(0, self.lease.valid_until_ms() - self.lease.now_ms())
        loop = asyncio.get_running_loop()
        self._step_down = loop.call_later(delay_ms / 1000, self._vouch_or_step_down)

    def _vouch_or_step_down(self) -> None:
        self._step_down = None
        if self.lease.may_write():  # renewed meanwhile
            self._arm_step_down()
            return
        if self.home.held():
            log.warning(
                "broker %d cannot vouch for its lease (no renewal acknowledged in time): "
                "it leads and coordinates nothing until the store answers again",
                self._broker.broker_id,
            )
        self._apply_leading()
        self._wake.set()

    def _apply_leading(
        self,
        ends: dict[TopicPartition, tuple[int, int]] | None = None,
        producers: dict[TopicPartition, ProducerStateManager] | None = None,
        read_from: int | None = None,
    ) -> None:
        """Make the home follow what the lease state says this broker leads
        (``ends`` and ``producers`` read from the writer's ``read_from`` mark)."""
        configs = {t.name: self._broker.topic_config(t) for t in self._broker.topics}
        self.home.follow(self.lease.leading(), configs, ends, producers, read_from)

    def _log_unavailable(self, e: KafkaError) -> None:
        now = time.monotonic()
        if now - self._last_error_log >= self.heartbeat_ms / 1000:
            self._last_error_log = now
            log.error("cluster store: %s", e)

    # -- what requests use -------------------------------------------------------

    def knows_partition(self, topic: str, partition: int) -> bool:
        return self._broker.topics.partition_exists(topic, partition)

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The epoch at which this broker leads the partition, if its lease says so."""
        return self.lease.leader_epoch(topic, partition)

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """The partition's leader broker id (-1: none) and leader epoch."""
        p = self.leaders.get((topic, partition))
        if p is None or p.leader_id is None or p.leader_id not in self.live.ids:
            return -1, (-1 if p is None else p.leader_epoch)
        if p.leader_id == self._broker.broker_id and not self.lease.may_write():
            # Whatever the last read said, this broker cannot vouch for it now.
            return -1, p.leader_epoch
        return p.leader_id, p.leader_epoch

    def address(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        """A live broker's address for the clients of ``listener``."""
        return self.addresses(listener).get(broker_id)

    def addresses(self, listener: str) -> dict[int, tuple[str, int]]:
        """Live brokers at their address on ``listener`` (see LiveBrokers)."""
        return self.live.on(listener)

    def writer(self) -> Writer | None:
        epoch = self.lease.lease_epoch
        if epoch is None or not self.lease.may_write():
            return None
        return Writer(self._broker.broker_id, epoch)

    def allocate_producer_ids(self, count: int) -> int:
        """A block of producer ids unique in the cluster (once per block, on the loop)."""
        return self._control.run_blocking(lambda s: allocate_producer_ids(s, count))

    # -- ACLs and SCRAM credentials -------------------------------------------------

    async def create_acls(self, bindings: list[AclBinding]) -> None:
        await self._control.run(lambda s: add_acls(s, bindings))
        await self._read_security()

    async def delete_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        removed = await self._control.run(lambda s: delete_acls(s, acl_filter.matches))
        await self._read_security()
        return removed

    async def alter_credentials(
        self, upserts: list[tuple[str, str, ScramCredential]], deletions: list[tuple[str, str]]
    ) -> None:
        await self._control.run(lambda s: alter_credentials(s, upserts, deletions))
        await self._read_security()

    async def _read_security(self) -> None:
        """This broker answers with its own change applied; the others see it
        at their next turn."""
        security = await self._control.run(lambda s: read_security(s, None))
        if security is not None:
            self._apply_security(security)

    # -- topics --------------------------------------------------------------------

    async def create_topics(self, topics: list[Topic]) -> dict[str, KafkaError]:
        """Create the topics in the store, elect their leaders, read the cluster."""
        failed = await self._control.run(lambda s: create_all(s, topics))
        await self._turn(renew_due_only=True)
        return failed

    def create_topic_now(self, topic: Topic) -> Topic:
        """On the loop, for a coordinator's first use of its internal topic.

        Another broker may have created it first: then the store's topic,
        with its id, is the one this broker learns, not its own plan."""

        def work(store: Store) -> tuple[dict[str, KafkaError], list[Topic]]:
            return create_all(store, [topic]), list_topics(store)

        failed, stored = self._control.run_blocking(work)
        if topic.name in failed and failed[topic.name].error_code != ErrorCode.topic_already_exists:
            raise failed[topic.name]
        created = next((t for t in stored if t.name == topic.name), topic)
        self._broker.topics.mirror_add(created)
        self._made_during_read[created.name] = created
        self.poke()
        return created

    async def add_partitions(self, name: str, count: int) -> Topic:
        """Grow the topic in the store, elect the new partitions' leaders, read
        the cluster; the other brokers learn them at their next turn."""
        grown = await self._control.run(lambda s: grow_topic(s, name, count))
        await self._turn(renew_due_only=True)
        known = self._broker.topics.get(name)
        if known is None or known.partitions < count:  # the turn could not read
            self._broker.topics.mirror_add(grown)
        return grown

    async def alter_topic_configs(self, name: str, plan: ConfigPlan) -> tuple[Topic, LogConfig]:
        """Replace the topic's config overrides in the store, read the cluster;
        every broker applies them to its logs at its next turn."""
        changed, config = await self._control.run(lambda s: alter_topic_configs(s, name, plan))
        await self._turn(renew_due_only=True)
        known = self._broker.topics.get(name)
        if known is None or known.configs != changed.configs:  # the turn could not read
            self._broker.topics.mirror_add(changed)
        return changed, config

    async def alter_configs(self, rtype: int, name: str, plan: Plan) -> dict[str, str]:
        """Change a group's or broker's dynamic configs in the store; the other
        brokers take them at their next turn."""
        configs = await self._control.run(lambda s: alter_configs(s, rtype, name, plan))
        self._broker.dynamic_configs.put(rtype, name, configs)
        return configs

    async def high_watermark(self, topic: str, partition: int) -> int:
        """A partition's high watermark as the store holds it, whichever
        broker leads it (for answers about partitions led elsewhere)."""
        offsets = await self._control.run(
            lambda s: s.transaction(lambda cur: partition_offsets(cur, topic, partition)[1])
        )
        return offsets.high_watermark

    async def delete_topics(self, names: list[str]) -> dict[str, KafkaError]:
        def work(store: Store) -> dict[str, KafkaError]:
            failed = {}
            for name in names:
                try:
                    delete_topic(store, name)
                except KafkaError as e:
                    failed[name] = e
            return failed

        failed = await self._control.run(work)
        await self._turn(renew_due_only=True)
        return failed
