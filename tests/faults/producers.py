"""Idempotent producers writing unique values, each send recorded: invoke
when handed to the client, ok with the partition and offset the broker
acknowledged, info when the client gave up (it may or may not be stored)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
from typing import Any

from faults.cluster import QUIET
from faults.history import INFO, INVOKE, OK, History


def _debug() -> dict[str, object]:
    """librdkafka's debug contexts from KGROUPS_FAULT_PRODUCER_DEBUG (e.g.
    ``eos,msg``: its idempotence state and each retry, to explain a duplicate)."""
    contexts = os.environ.get("KGROUPS_FAULT_PRODUCER_DEBUG")
    return {"debug": contexts, "log_level": 7} if contexts else {"log_level": QUIET}


class ConfluentProducer:
    """librdkafka, enable.idempotence=true, acks=all."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, partitions: int, history: History, seed: int
    ) -> None:
        self.name, self.bootstrap, self.topic = name, bootstrap, topic
        self.partitions, self.history = partitions, history
        self.rng = random.Random(seed)
        self.rate = 40.0  # records per second
        self.fatal = False

    def _client(self) -> Any:
        from confluent_kafka import Producer

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 30000,
                "socket.timeout.ms": 10000,
                "topic.metadata.refresh.interval.ms": 2000,
                **_debug(),
            }
        )

    def run(self, stop: threading.Event) -> None:
        producer = self._client()
        n = 0
        while not stop.wait(1 / self.rate):
            value = f"{self.name}-{n}"
            n += 1
            self.history.add(self.name, INVOKE, "produce", topic=self.topic, value=value)
            try:
                producer.produce(
                    self.topic,
                    value.encode(),
                    partition=self.rng.randrange(self.partitions),
                    on_delivery=lambda err, msg, v=value: self._delivered(err, msg, v),
                )
            except Exception as e:  # a full queue, a fatal producer: never sent
                self.history.add(self.name, INFO, "produce", value=value, error=str(e))
            try:
                producer.poll(0)
            except Exception as e:  # librdkafka raises its fatal errors here too
                self.history.add(self.name, INFO, "fatal", error=str(e))
                self.fatal = True
            if self.fatal:  # the client is unusable: its sends are left unknown
                self.fatal = False
                producer = self._client()
        with contextlib.suppress(Exception):
            producer.flush(30)

    def _delivered(self, err: Any, msg: Any, value: str) -> None:
        if err is None:
            self.history.add(
                self.name,
                OK,
                "produce",
                topic=self.topic,
                value=value,
                partition=msg.partition(),
                # None when librdkafka acknowledged it implicitly (a later
                # batch of the partition was): written, offset unknown (-1).
                offset=-1 if msg.offset() is None else msg.offset(),
            )
        else:
            self.history.add(self.name, INFO, "produce", value=value, error=str(err))
            if err.fatal() and not self.fatal:
                self.history.add(self.name, INFO, "fatal", error=str(err))
                self.fatal = True


class KgroupsProducer:
    """kgroups' own AsyncProducer, idempotent (its default), acks=all."""

    def __init__(
        self, name: str, bootstrap: str, topic: str, partitions: int, history: History, seed: int
    ) -> None:
        self.name, self.bootstrap, self.topic = name, bootstrap, topic
        self.partitions, self.history = partitions, history
        self.rng = random.Random(seed)
        self.rate = 40.0

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._run(stop))

    async def _run(self, stop: threading.Event) -> None:
        from kgroups.client.async_producer import AsyncProducer

        producer = AsyncProducer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "delivery.timeout.ms": 30000,
                "request.timeout.ms": 10000,
                "max.block.ms": 10000,
                "metadata.max.age.ms": 2000,
            }
        )
        pending: set[asyncio.Task[None]] = set()
        n = 0
        while not stop.is_set():
            await asyncio.sleep(1 / self.rate)
            value = f"{self.name}-{n}"
            n += 1
            self.history.add(self.name, INVOKE, "produce", topic=self.topic, value=value)
            partition = self.rng.randrange(self.partitions)
            try:
                future = await producer.send(self.topic, value.encode(), partition=partition)
            except Exception as e:
                self.history.add(self.name, INFO, "produce", value=value, error=repr(e))
                continue
            task = asyncio.create_task(self._delivered(future, value))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.wait(pending, timeout=30)
        with contextlib.suppress(Exception):
            await producer.close(10)

    async def _delivered(self, future: Any, value: str) -> None:
        try:
            meta = await future
        except Exception as e:
            self.history.add(self.name, INFO, "produce", value=value, error=repr(e))
            return
        self.history.add(
            self.name,
            OK,
            "produce",
            topic=self.topic,
            value=value,
            partition=meta.partition,
            offset=meta.offset,
        )
