"""A tiny consumer service: reads orders, totals them, commits after each batch."""

from __future__ import annotations

from confluent_kafka import Consumer


def make_consumer(bootstrap_servers: str, group: str = "order-totals") -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


def total_orders(consumer: Consumer, topic: str, count: int, timeout: float = 20) -> int:
    """Sum the amounts of the next `count` orders, committing after each batch."""
    consumer.subscribe([topic])
    total = seen = 0
    while seen < count:
        batch = [m for m in consumer.consume(count - seen, timeout) if m.error() is None]
        if not batch:
            raise TimeoutError(f"{seen} of {count} orders")
        total += sum(int(m.value()) for m in batch)
        seen += len(batch)
        consumer.commit(asynchronous=False)
    return total
