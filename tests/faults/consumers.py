"""Consumers, each recording what it was given: group members (the classic
protocol and KIP-848's consumer protocol) that commit what they consumed,
read_committed readers of every partition outside any group, and an
observer reading the groups' committed offsets."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from typing import Any

from faults.cluster import GROUP_HEARTBEAT_MS, GROUP_SESSION_MS, QUIET
from faults.history import INFO, INVOKE, OK, History
from faults.wedged import MainThreadWatch, close_aside

COMMIT_EVERY_S = 1.0


class ConfluentMember:
    """A librdkafka group member; `protocol` is group.protocol."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, group: str, protocol: str, history: History
    ) -> None:
        self.name, self.bootstrap, self.topic, self.group = name, bootstrap, topic, group
        self.protocol, self.history = protocol, history
        self.owned: set[int] = set()
        self.watch = MainThreadWatch()

    def _config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "group.protocol": self.protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "socket.timeout.ms": 10000,
            "log_level": QUIET,
            "topic.metadata.refresh.interval.ms": 2000,
            **self.watch.config(),
        }
        if self.protocol == "classic":  # the broker sets these under the consumer protocol
            config["session.timeout.ms"] = GROUP_SESSION_MS
            config["heartbeat.interval.ms"] = GROUP_HEARTBEAT_MS
            config["partition.assignment.strategy"] = "cooperative-sticky"
        return config

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        gained = sorted(tp.partition for tp in partitions)
        self.owned |= set(gained)
        self.history.add(self.name, OK, "assigned", group=self.group, partitions=gained)

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        gone = sorted(tp.partition for tp in partitions)
        self.owned -= set(gone)
        self.history.add(self.name, OK, "revoked", group=self.group, partitions=gone)

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer

        self.watch = MainThreadWatch()
        consumer = Consumer(self._config())
        consumer.subscribe(
            [self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked
        )
        return consumer

    def run(self, stop: threading.Event) -> None:
        from confluent_kafka import KafkaException

        consumer = self._consumer()
        next_commit = time.monotonic() + COMMIT_EVERY_S
        try:
            while not stop.is_set():
                records = []
                polled = consumer.consume(100, 0.2)
                for m in polled:
                    if m.error() is not None:
                        self.history.add(self.name, INFO, "error", error=str(m.error()))
                    else:
                        records.append([m.partition(), m.offset(), m.value().decode()])
                if records:
                    self.history.add(
                        self.name,
                        OK,
                        "poll",
                        group=self.group,
                        topic=self.topic,
                        read_committed=True,
                        records=records,
                    )
                # Wedged: its partitions are lost, a new member joins.
                if self.watch.wedged(len(polled) < 100):
                    self.history.add(self.name, INFO, "wedged")
                    close_aside(consumer)
                    if self.owned:
                        self._revoked(consumer, [_Tp(p) for p in sorted(self.owned)])
                    consumer = self._consumer()
                if time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + COMMIT_EVERY_S
                    self._commit(consumer, KafkaException)
        finally:
            with contextlib.suppress(Exception):
                consumer.close()
            if self.owned:  # whatever close() did not report is given up now
                self._revoked(consumer, [_Tp(p) for p in sorted(self.owned)])

    def _commit(self, consumer: Any, error_type: type[Exception]) -> None:
        try:
            positions = consumer.position(consumer.assignment())
        except error_type:
            return
        offsets = {tp.partition: tp.offset for tp in positions if tp.offset >= 0}
        if not offsets:
            return
        self.history.add(self.name, INVOKE, "commit", group=self.group, offsets=offsets)
        try:
            done = consumer.commit(asynchronous=False)
        except error_type as e:
            self.history.add(self.name, INFO, "commit", group=self.group, error=str(e))
            return
        acked = {
            tp.partition: tp.offset for tp in done or () if tp.error is None and tp.offset >= 0
        }
        self.history.add(self.name, OK, "commit", group=self.group, offsets=acked)


class _Tp:
    def __init__(self, partition: int) -> None:
        self.partition = partition


class KgroupsMember:
    """A member through kgroups' own AsyncConsumer; `protocol` is group.protocol."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, group: str, protocol: str, history: History
    ) -> None:
        self.name, self.bootstrap, self.topic, self.group = name, bootstrap, topic, group
        self.protocol, self.history = protocol, history
        self.owned: set[int] = set()
        self.consumed: dict[int, int] = {}  # partition -> next offset, while owned

    # The rebalance listener's hooks.
    def on_partitions_assigned(self, partitions: list[Any]) -> None:
        gained = sorted(tp.partition for tp in partitions)
        self.owned |= set(gained)
        for p in gained:  # a position from an earlier ownership is not ours to commit
            self.consumed.pop(p, None)
        self.history.add(self.name, OK, "assigned", group=self.group, partitions=gained)

    def on_partitions_revoked(self, partitions: list[Any]) -> None:
        gone = sorted(tp.partition for tp in partitions)
        if gone:
            self.owned -= set(gone)
            for p in gone:
                self.consumed.pop(p, None)
            self.history.add(self.name, OK, "revoked", group=self.group, partitions=gone)

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._run(stop))

    async def _run(self, stop: threading.Event) -> None:
        from kgroups.client.async_consumer import AsyncConsumer
        from kgroups.client.consumer_record import TopicPartition

        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "group.protocol": self.protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "request.timeout.ms": 10000,
            "metadata.max.age.ms": 2000,
        }
        if self.protocol == "classic":
            config["session.timeout.ms"] = GROUP_SESSION_MS
            config["heartbeat.interval.ms"] = GROUP_HEARTBEAT_MS
        consumer = AsyncConsumer(config)
        consumer.subscribe([self.topic], listener=self)
        next_commit = time.monotonic() + COMMIT_EVERY_S
        try:
            while not stop.is_set():
                try:
                    polled = await consumer.poll(0.2)
                except Exception as e:
                    self.history.add(self.name, INFO, "error", error=repr(e))
                    await asyncio.sleep(0.2)
                    continue
                records = [[r.partition, r.offset, (r.value or b"").decode()] for r in polled]
                for p, o, _v in records:
                    self.consumed[p] = o + 1
                if records:
                    self.history.add(
                        self.name,
                        OK,
                        "poll",
                        group=self.group,
                        topic=self.topic,
                        read_committed=True,
                        records=records,
                    )
                if time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + COMMIT_EVERY_S
                    offsets = {p: o for p, o in self.consumed.items() if p in self.owned}
                    if offsets:
                        self.history.add(
                            self.name, INVOKE, "commit", group=self.group, offsets=offsets
                        )
                        try:
                            await consumer.commit(
                                {TopicPartition(self.topic, p): o for p, o in offsets.items()},
                                timeout=10,
                            )
                        except Exception as e:
                            self.history.add(
                                self.name, INFO, "commit", group=self.group, error=repr(e)
                            )
                        else:
                            self.history.add(
                                self.name, OK, "commit", group=self.group, offsets=offsets
                            )
        finally:
            with contextlib.suppress(Exception):
                await consumer.close(10)
            if self.owned:
                self.on_partitions_revoked([_Tp(p) for p in sorted(self.owned)])


class ConfluentReader:
    """Reads every partition from the start, read_committed, outside any group."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, partitions: int, history: History
    ) -> None:
        self.name, self.bootstrap, self.topic = name, bootstrap, topic
        self.partitions, self.history = partitions, history

    def _consumer(self, watch: MainThreadWatch, start: dict[int, int]) -> Any:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"{self.name}-unused",  # required by the client, never joined
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "socket.timeout.ms": 10000,
                "log_level": QUIET,
                "topic.metadata.refresh.interval.ms": 2000,
                **watch.config(),
            }
        )
        consumer.assign([TopicPartition(self.topic, p, o) for p, o in start.items()])
        return consumer

    def run(self, stop: threading.Event) -> None:
        from confluent_kafka import OFFSET_BEGINNING

        start = {p: OFFSET_BEGINNING for p in range(self.partitions)}
        watch = MainThreadWatch()
        consumer = self._consumer(watch, start)
        try:
            while not stop.is_set():
                records = []
                polled = consumer.consume(100, 0.2)
                for m in polled:
                    if m.error() is None:
                        records.append([m.partition(), m.offset(), m.value().decode()])
                        start[m.partition()] = m.offset() + 1
                if watch.wedged(len(polled) < 100):  # a new client goes on where this one stopped
                    self.history.add(self.name, INFO, "wedged")
                    close_aside(consumer)
                    watch = MainThreadWatch()
                    consumer = self._consumer(watch, start)
                if records:
                    self.history.add(
                        self.name,
                        OK,
                        "poll",
                        topic=self.topic,
                        read_committed=True,
                        records=records,
                    )
        finally:
            consumer.close()


class CommitObserver:
    """Reads the committed offsets of each group, now and then."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, groups: list[str], history: History, seed: int
    ) -> None:
        self.name, self.bootstrap, self.topic = name, bootstrap, topic
        self.groups, self.history = groups, history
        self.rng = random.Random(seed)

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._run(stop))

    async def _run(self, stop: threading.Event) -> None:
        from kgroups.client.admin import Admin

        admin = Admin(self.bootstrap)
        while not stop.is_set():
            await asyncio.sleep(self.rng.uniform(0.2, 0.8))
            group = self.rng.choice(self.groups)
            self.history.add(self.name, INVOKE, "committed", group=group)
            try:
                seen = await asyncio.wait_for(admin.committed(group), 10)
            except Exception as e:
                self.history.add(self.name, INFO, "committed", group=group, error=repr(e))
                await admin.close()
                admin = Admin(self.bootstrap)
                continue
            offsets = {p: o for (t, p), o in seen.items() if t == self.topic}
            self.history.add(self.name, OK, "committed", group=group, offsets=offsets)
        await admin.close()
