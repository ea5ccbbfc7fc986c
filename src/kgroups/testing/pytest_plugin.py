"""pytest plugin, loaded through the `pytest11` entry point: fixtures
`kafka_broker`, `kafka_bootstrap`, `kafka_helpers` and `kafka_clock`.

`kafka_broker` is a fresh broker per test; `--kafka-broker-scope=session`
(or the ini option `kafka_broker_scope = session`) shares one across the
session. Overrides for it: the `kafka_broker_overrides` fixture, which a
conftest.py may redefine.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

# Imported where used: every pytest run in an environment with kgroups loads
# this module, and most of those runs never start a broker.
if TYPE_CHECKING:
    from kgroups.testing.broker_clock import BrokerClock
    from kgroups.testing.embedded_broker import EmbeddedBroker
    from kgroups.testing.helpers import KafkaHelpers


def _unmark_kgroups_for_rewrite() -> None:
    """pytest rewrites the asserts of every module of a distribution that
    provides a plugin, so kgroups' whole package would be imported through
    an AST pass: slower (no bytecode cache where PYTHONDONTWRITEBYTECODE is
    set), and on CPython 3.11 liable to fail when two threads import at once
    ("AST constructor recursion depth mismatch"), as a broker thread's first
    imports beside a test's do. Only this module needs pytest's eye, and it is
    loaded by now. pytest offers no public switch for a package, hence its
    hook's own set, left alone if it is not there."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set):
            marked.discard("kgroups")


_unmark_kgroups_for_rewrite()


def pytest_addoption(parser: pytest.Parser) -> None:
    help = "kafka_broker's scope: function (a broker per test) or session (one for all)"
    parser.addoption("--kafka-broker-scope", choices=("function", "session"), help=help)
    parser.addini("kafka_broker_scope", help, default="function")


def _scope(fixture_name: str, config: pytest.Config) -> str:
    scope: str = config.getoption("--kafka-broker-scope") or config.getini("kafka_broker_scope")
    return scope


@pytest.fixture(scope="session")
def kafka_broker_overrides() -> dict[str, str]:
    """Kafka broker properties for `kafka_broker`; redefine it to change them."""
    return {}


@pytest.fixture
def kafka_clock() -> BrokerClock:
    """Virtual time for `kafka_broker` in the tests that ask for it: the
    broker's time moves only by `kafka_clock.advance(ms)`."""
    from kgroups.testing.broker_clock import BrokerClock

    return BrokerClock()


@pytest.fixture(scope=_scope)  # type: ignore[arg-type]
def kafka_broker(
    request: pytest.FixtureRequest, kafka_broker_overrides: dict[str, str]
) -> Iterator[EmbeddedBroker]:
    from kgroups.testing.embedded_broker import EmbeddedBroker

    # Only a per-test broker can take the test's clock (pytest refuses a
    # function-scoped fixture in a session-scoped one).
    wants_clock = "kafka_clock" in request.fixturenames
    clock = request.getfixturevalue("kafka_clock") if wants_clock else None
    with EmbeddedBroker(overrides=kafka_broker_overrides, clock=clock) as broker:
        yield broker


@pytest.fixture
def kafka_bootstrap(kafka_broker: EmbeddedBroker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture
def kafka_helpers(kafka_bootstrap: str) -> KafkaHelpers:
    from kgroups.testing.helpers import KafkaHelpers

    return KafkaHelpers(kafka_bootstrap)
