"""A real kgroups broker for other projects' tests: `EmbeddedBroker`, and a
pytest plugin (`kafka_broker`, `kafka_bootstrap`, `kafka_helpers`, `kafka_clock`) that
pytest loads through the `pytest11` entry point. See docs/testing.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgroups.testing.broker_clock import BrokerClock
    from kgroups.testing.embedded_broker import EmbeddedBroker

__all__ = ["BrokerClock", "EmbeddedBroker"]


def __getattr__(name: str) -> Any:
    # Imported on first use: pytest imports this package (for the plugin) in
    # every run, and the broker's modules are heavy.
    if name == "EmbeddedBroker":
        from kgroups.testing.embedded_broker import EmbeddedBroker

        return EmbeddedBroker
    if name == "BrokerClock":
        from kgroups.testing.broker_clock import BrokerClock

        return BrokerClock
    raise AttributeError(name)
