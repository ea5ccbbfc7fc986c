"""Fault injection from outside the test's process: the fault admin endpoint
(``fault.admin.port``) that a process broker's ``faults`` uses, and the
``kgroups fault`` command a Go, Java or Node test suite would run."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer

from kgroups.testing import EmbeddedBroker
from kgroups.testing.faults import FaultRefused
from kgroups.testing.helpers import KafkaHelpers


@pytest.fixture(scope="module")
def process_broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(process=True) as broker:
        KafkaHelpers(broker.bootstrap_servers).create_topic("disk")
        yield broker


def _kgroups(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgroups", "fault", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _produce_error(bootstrap: str, value: bytes) -> int | None:
    """The error code of one produce with no retries (None: stored)."""
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0, "acks": "all"})
    errors: list[KafkaError | None] = []
    producer.produce("disk", value, partition=0, on_delivery=lambda e, m: errors.append(e))
    producer.flush(20)
    [error] = errors
    return None if error is None else error.code()


def test_the_cli_fails_and_restores_appends(process_broker: EmbeddedBroker) -> None:
    admin = process_broker.fault_admin_url
    assert admin is not None
    set_fault = _kgroups("--admin", admin, "fail-appends", "--topic", "disk")
    assert set_fault.returncode == 0, set_fault.stderr
    assert json.loads(set_fault.stdout)["append_errors"] == {"disk": "KAFKA_STORAGE_ERROR"}
    bootstrap = process_broker.bootstrap_servers
    assert _produce_error(bootstrap, b"lost") == KafkaError.KAFKA_STORAGE_ERROR

    cleared = _kgroups("--admin", admin, "clear")
    assert cleared.returncode == 0, cleared.stderr
    assert _produce_error(bootstrap, b"kept") is None
    assert KafkaHelpers(bootstrap).read("disk", 2, timeout=3) == [b"kept"]


def test_the_cli_reports_a_refused_action(process_broker: EmbeddedBroker) -> None:
    admin = process_broker.fault_admin_url
    assert admin is not None
    refused = _kgroups("--admin", admin, "expire-member", "--group", "none", "--member", "m")
    assert refused.returncode == 1
    assert "UNKNOWN_MEMBER_ID" in refused.stderr
    shown = _kgroups("--admin", admin, "show")
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["coordinator_errors"] == {}


def test_a_process_brokers_faults_go_through_the_endpoint(process_broker: EmbeddedBroker) -> None:
    faults = process_broker.faults
    faults.delay("Fetch", ms=250)
    faults.coordinator_error(group="g", error="COORDINATOR_LOAD_IN_PROGRESS")
    try:
        described = faults.describe()
        assert described["delays_ms"] == {"Fetch": 250}
        assert described["coordinator_errors"] == {"g": "COORDINATOR_LOAD_IN_PROGRESS"}
        with pytest.raises(FaultRefused, match="unknown API"):
            faults.drop("Frobnicate")
    finally:
        faults.clear()
    assert faults.describe()["delays_ms"] == {}


def test_the_endpoint_answers_bad_requests_with_400(process_broker: EmbeddedBroker) -> None:
    admin = process_broker.fault_admin_url
    for path, body in (
        ("/faults/delay", b"[1, 2]"),  # not an object
        ("/faults/delay", b"{not json"),
        ("/faults/delay", b'{"api": "Fetch"}'),  # ms missing
        ("/faults/no-such-action", b"{}"),
    ):
        request = urllib.request.Request(
            f"{admin}{path}",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=10)
        assert e.value.code == (404 if path == "/faults/no-such-action" else 400), path
        assert "error" in json.loads(e.value.read())


def test_the_endpoint_is_off_unless_configured() -> None:
    with EmbeddedBroker() as broker:
        assert broker.fault_admin_url is None
    with EmbeddedBroker(overrides={"fault.admin.port": 0}) as broker:
        url = broker.fault_admin_url
        assert url is not None and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/faults", timeout=10) as response:
            assert json.loads(response.read())["paused"] == []


def test_a_process_broker_given_port_0_still_gets_an_endpoint() -> None:
    with EmbeddedBroker(process=True, overrides={"fault.admin.port": 0}) as broker:
        broker.faults.pause_partition("t", 0)
        assert broker.faults.describe()["paused"] == [["t", 0]]
