"""The configuration a test broker starts with: Kafka's, bound to loopback,
with the two changes that make a one-broker test quick."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def broker_properties(log_dir: Path, port: int, overrides: Mapping[str, str]) -> dict[str, str]:
    props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(log_dir),
        # A group forms as soon as its first member joins, as in Kafka's own test setups.
        "group.initial.rebalance.delay.ms": "0",
        # Fewer __consumer_offsets partitions to create and load at start.
        "offsets.topic.num.partitions": "5",
    }
    props.update(overrides)
    return props
