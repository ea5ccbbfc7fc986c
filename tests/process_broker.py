"""The suite's name for kgroups.testing's process broker; overrides are
`key=value` strings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgroups.testing.process_broker import ProcessBroker, free_port

__all__ = ["BrokerProcess", "free_port"]


class BrokerProcess(ProcessBroker):
    def __init__(
        self,
        data: Path,
        port: int | None = None,
        *overrides: str,
        log_level: str | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        props = dict(o.split("=", 1) for o in overrides)
        super().__init__(data, props, port, log_level, preexec_fn)
