"""Small helpers a test uses around its broker: create a topic, produce,
read back. They use confluent-kafka when it is installed (the client most
applications under test use), else kgroups' own client."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Iterable, Mapping

from kgroups.client import topic_admin


def _confluent() -> bool:
    return importlib.util.find_spec("confluent_kafka") is not None


class KafkaHelpers:
    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> str:
        configs = [f"{k}={v}" for k, v in (config or {}).items()]
        asyncio.run(topic_admin.create(self.bootstrap_servers, name, partitions, configs))
        return name

    def produce(
        self, topic: str, values: Iterable[bytes], key: bytes | None = None, partition: int = 0
    ) -> None:
        """Produce `values` to one partition and wait until all are acknowledged."""
        if _confluent():
            from confluent_kafka import KafkaException, Producer

            errors: list[object] = []

            def delivered(error: object, _message: object) -> None:
                if error is not None:
                    errors.append(error)

            producer = Producer({"bootstrap.servers": self.bootstrap_servers})
            for value in values:
                producer.produce(topic, value, key, partition, on_delivery=delivered)
            if producer.flush(30) or errors:
                raise KafkaException(errors[0] if errors else "produce timed out")
            return
        from kgroups.client import Producer as OwnProducer

        own = OwnProducer({"bootstrap.servers": self.bootstrap_servers})
        try:
            for future in [own.send(topic, v, key, partition=partition) for v in values]:
                future.result()
        finally:
            own.close()

    def read(self, topic: str, count: int, timeout: float = 10) -> list[bytes]:
        """The values of the first `count` records of the topic, all partitions,
        without a consumer group (nothing is committed)."""
        deadline = time.monotonic() + timeout
        values: list[bytes] = []
        if _confluent():
            from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

            consumer = Consumer(
                {"bootstrap.servers": self.bootstrap_servers, "group.id": "kgroups-helpers"}
            )
            try:
                meta = consumer.list_topics(topic, 10).topics[topic]
                consumer.assign(
                    [TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions]
                )
                while len(values) < count and time.monotonic() < deadline:
                    message = consumer.poll(0.2)
                    if message is not None and message.error() is None:
                        values.append(message.value() or b"")
            finally:
                consumer.close()
            return values
        from kgroups.client import Consumer as OwnConsumer
        from kgroups.client import Producer as OwnProducer

        probe = OwnProducer({"bootstrap.servers": self.bootstrap_servers})
        try:
            partitions = probe.partitions_for(topic)
        finally:
            probe.close()
        own = OwnConsumer(
            {"bootstrap.servers": self.bootstrap_servers, "auto.offset.reset": "earliest"}
        )
        try:
            own.assign([(topic, p) for p in partitions])
            while len(values) < count and time.monotonic() < deadline:
                values += [r.value or b"" for r in own.poll(0.2)]
        finally:
            own.close()
        return values[:count]
