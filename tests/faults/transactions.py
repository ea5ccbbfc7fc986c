"""The transactional workload: consume, transform, produce, exactly once.

Each transformer is a member of one classic group reading the input topic
read_committed; for every batch it opens a transaction with librdkafka's
transactional producer, writes one output per input to the output topic
(`<input value>><transformer>.<transaction number>`, so the checker can tell
which input an output came from and that two attempts differ), sends the
batch's offsets to the transaction, and commits it, or aborts it at random.

On errors it does what a correct application does: an abortable error
aborts the transaction, a fatal one (the producer fenced, say) makes a new
producer with the same transactional id, and either way the consumer goes
back to the group's committed offsets, so the batch is processed again by
whichever transaction commits next.

Recorded: the batch read (poll), each transaction (txn: invoke, then ok
with outcome commit or abort when certain, info when not), the offsets
committed with it (commit), and each return to the committed offsets
(rewind: the member's next offset of those partitions starts afresh).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from faults.cluster import GROUP_HEARTBEAT_MS, GROUP_SESSION_MS, QUIET
from faults.history import INFO, INVOKE, OK, History
from faults.wedged import MainThreadWatch, close_aside

ABORT_CHANCE = 0.1
# Each transactional call; a fault lasts seconds, a coordinator moves in a few.
TIMEOUT_S = 10.0
TRANSACTION_TIMEOUT_S = 30.0
COMMIT_TRIES = 2
REWIND_TRIES = 3
# The longest a transformer goes without polling its consumer (and so without
# hearing that the group took its partitions away): one transaction's calls,
# sending the offsets, committing and aborting, each timing out.
DEAF_S = TIMEOUT_S * (2 + COMMIT_TRIES) + 1.0
STUCK_S = TIMEOUT_S + 5.0
# A member stuck in a call leaves the group after this, and another takes
# its partitions.
MAX_POLL_INTERVAL_MS = int(DEAF_S * 1000) + 20000


class ConfluentTransformer:
    def __init__(
        self,
        name: str,
        bootstrap: str,
        source: str,
        sink: str,
        group: str,
        history: History,
        seed: int,
    ) -> None:
        self.name, self.bootstrap, self.source, self.sink = name, bootstrap, source, sink
        self.group, self.history = group, history
        self.rng = random.Random(seed)
        self.owned: set[int] = set()
        self.count = 0  # transactions begun
        self.rejoin = False  # the consumer could not rewind: make a new one
        self.calling_since: float | None = None  # when the call under way began

    def run(self, stop: threading.Event) -> None:
        producer = self._producer(stop)
        while not stop.is_set() and producer is not None:
            watch = MainThreadWatch()
            consumer = self._consumer(watch)
            self.rejoin = wedged = False
            try:
                while not stop.is_set() and producer is not None and not self.rejoin:
                    polled = consumer.consume(200, 0.5)
                    batch = [m for m in polled if m.error() is None]
                    # Wedged: its partitions are lost, a new member joins.
                    if watch.wedged(len(polled) < 200):
                        self.history.add(self.name, INFO, "wedged")
                        wedged = True
                        break
                    if batch:
                        producer = self._transaction(consumer, producer, batch, stop)
            finally:
                if wedged:
                    close_aside(consumer)
                else:
                    with contextlib.suppress(Exception):
                        consumer.close()
                if self.owned:  # whatever close() did not report is given up now
                    self._revoked(consumer, [_Tp(p) for p in sorted(self.owned)])
        if producer is not None:
            with contextlib.suppress(Exception):
                producer.abort_transaction(5)

    def _consumer(self, watch: MainThreadWatch) -> Any:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "session.timeout.ms": GROUP_SESSION_MS,
                "heartbeat.interval.ms": GROUP_HEARTBEAT_MS,
                "partition.assignment.strategy": "cooperative-sticky",
                "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                "socket.timeout.ms": 10000,
                "topic.metadata.refresh.interval.ms": 2000,
                "log_level": QUIET,
                **watch.config(),
            }
        )
        consumer.subscribe(
            [self.source], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked
        )
        return consumer

    def _producer(self, stop: threading.Event) -> Any:
        """A producer with this transformer's transactional id, initialized
        (which fences any earlier one and aborts its open transaction)."""
        from confluent_kafka import KafkaException, Producer

        while not stop.is_set():
            producer = Producer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": self.name,
                    "transaction.timeout.ms": int(TRANSACTION_TIMEOUT_S * 1000),
                    "message.timeout.ms": int(TRANSACTION_TIMEOUT_S * 1000),
                    "socket.timeout.ms": 10000,
                    "topic.metadata.refresh.interval.ms": 2000,
                    "log_level": QUIET,
                }
            )
            for _ in range(5):
                try:
                    with self._calling():
                        producer.init_transactions(TIMEOUT_S)
                    return producer
                except KafkaException as e:
                    self.history.add(self.name, INFO, "error", error=str(e))
                    if not e.args[0].retriable() or stop.is_set():
                        break
        return None

    def _transaction(
        self, consumer: Any, producer: Any, batch: list[Any], stop: threading.Event
    ) -> Any:
        """One transaction over ``batch``; returns the producer to go on with."""
        from confluent_kafka import KafkaException, TopicPartition

        self.count += 1
        records = [[m.partition(), m.offset(), m.value().decode()] for m in batch]
        self.history.add(
            self.name,
            OK,
            "poll",
            group=self.group,
            topic=self.source,
            read_committed=True,
            records=records,
        )
        values = [[p, f"{v}>{self.name}.{self.count}"] for p, _o, v in records]
        offsets: dict[int, int] = {}
        for p, o, _v in records:
            offsets[p] = max(offsets.get(p, 0), o + 1)
        about = {"topic": self.sink, "input": self.source, "group": self.group}
        self.history.add(self.name, INVOKE, "txn", values=values, **about)
        committing = False  # once a commit may have reached the coordinator
        try:
            producer.begin_transaction()
            for p, v in values:
                producer.produce(self.sink, v.encode(), partition=p)
            with self._calling():
                producer.send_offsets_to_transaction(
                    [TopicPartition(self.source, p, o) for p, o in offsets.items()],
                    consumer.consumer_group_metadata(),
                    TIMEOUT_S,
                )
            if self.rng.random() < ABORT_CHANCE:
                with self._calling():
                    producer.abort_transaction(TIMEOUT_S)
                self.history.add(self.name, OK, "txn", values=values, outcome="abort", **about)
                self._rewind(consumer, stop)
                return producer
            self.history.add(self.name, INVOKE, "commit", group=self.group, offsets=offsets)
            committing = True
            self._commit(producer, stop)
        except (KafkaException, BufferError) as e:
            return self._recover(consumer, producer, e, values, about, committing, stop)
        self.history.add(self.name, OK, "txn", values=values, outcome="commit", **about)
        self.history.add(self.name, OK, "commit", group=self.group, offsets=offsets)
        return producer

    def _commit(self, producer: Any, stop: threading.Event) -> None:
        """commit_transaction, again if it times out (librdkafka's rule for a
        retriable commit error), at most COMMIT_TRIES times; raises the last
        error, and the transaction is then aborted."""
        from confluent_kafka import KafkaException

        for attempt in range(COMMIT_TRIES):
            try:
                with self._calling():
                    producer.commit_transaction(TIMEOUT_S)
                return
            except KafkaException as e:
                last = attempt == COMMIT_TRIES - 1
                if not e.args[0].retriable() or stop.is_set() or last:
                    raise
                self.history.add(self.name, INFO, "error", error=str(e))

    def _recover(
        self,
        consumer: Any,
        producer: Any,
        error: Exception,
        values: list[list[Any]],
        about: dict[str, str],
        committing: bool,
        stop: threading.Event,
    ) -> Any:
        """Abort if the producer can, else replace it; then rewind."""
        from confluent_kafka import KafkaException

        err = error.args[0] if isinstance(error, KafkaException) else None
        self.history.add(self.name, INFO, "error", error=str(error))
        if err is not None and err.fatal():
            self.history.add(self.name, INFO, "txn", values=values, error=str(error), **about)
            with contextlib.suppress(Exception):
                producer.flush(0)
            producer = self._producer(stop)
        else:
            try:
                with self._calling():
                    producer.abort_transaction(TIMEOUT_S)
            except KafkaException as e:
                self.history.add(self.name, INFO, "txn", values=values, error=str(e), **about)
                producer = self._producer(stop)
            else:
                # Aborted for sure unless a commit was under way and its
                # answer lost: then the coordinator may have committed.
                if committing:
                    self.history.add(self.name, INFO, "txn", values=values, **about)
                else:
                    self.history.add(self.name, OK, "txn", values=values, outcome="abort", **about)
        if committing:
            self.history.add(self.name, INFO, "commit", group=self.group)
        self._rewind(consumer, stop)
        return producer

    def _rewind(self, consumer: Any, stop: threading.Event) -> None:
        """Back to the group's committed offsets of every owned partition, so
        that the aborted batch is read again; if that fails, leave the group
        and join again, which starts from the committed offsets too."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

        owned = sorted(self.owned)
        if not owned:
            return
        self.history.add(self.name, OK, "rewind", group=self.group, partitions=owned)
        for _ in range(REWIND_TRIES):
            if stop.is_set():
                return
            try:
                with self._calling():
                    committed = consumer.committed(
                        [TopicPartition(self.source, p) for p in owned], TIMEOUT_S
                    )
                for tp in committed:
                    offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                    consumer.seek(TopicPartition(self.source, tp.partition, offset))
                return
            except KafkaException as e:
                self.history.add(self.name, INFO, "error", error=f"rewind: {e}")
                time.sleep(0.5)
        self.rejoin = True

    @contextlib.contextmanager
    def _calling(self) -> Iterator[None]:
        self.calling_since = time.monotonic()
        since = self.history.now()
        try:
            yield
        finally:
            self.calling_since = None
            if self.history.now() - since > STUCK_S:
                # Far past the call's timeout: the client library was stuck
                # (see wedged.py); the checker does not judge the member by it.
                self.history.add(self.name, INFO, "stalled", since=since)

    def stuck(self) -> bool:
        """In one call far beyond its timeout: stuck in librdkafka (see
        wedged.py), and so is the group's rebalance until
        max.poll.interval.ms removes it."""
        since = self.calling_since
        return since is not None and time.monotonic() - since > STUCK_S

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        gained = sorted(tp.partition for tp in partitions)
        self.owned |= set(gained)
        self.history.add(self.name, OK, "assigned", group=self.group, partitions=gained)

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        gone = sorted(tp.partition for tp in partitions)
        self.owned -= set(gone)
        self.history.add(self.name, OK, "revoked", group=self.group, partitions=gone)


class _Tp:
    def __init__(self, partition: int) -> None:
        self.partition = partition
