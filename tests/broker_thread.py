"""The suite's name for kgroups.testing's thread broker; overrides are keyword
arguments with dots spelt as underscores (`offsets_topic_num_partitions=1`)."""

from __future__ import annotations

from pathlib import Path

from kgroups.clock import Clock
from kgroups.testing.thread_broker import ThreadBroker


class BrokerThread(ThreadBroker):
    def __init__(self, log_dir: Path, clock: Clock | None = None, **overrides: object) -> None:
        props = {k.replace("_", "."): str(v) for k, v in overrides.items()}
        super().__init__(log_dir, props, clock)
