"""`kgroups share-groups list|describe|reset-offsets|delete-offsets` against a
broker whose share group was consumed by kgroups' own ShareConsumer."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, produce
from config_admin_wire import SET, incremental

from kgroups.cli import main
from kgroups.client.share_consumer import ShareConsumer
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

TOPIC = "jobs"
GROUP = "workers"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path / "data",
        group_share_heartbeat_interval_ms=200,
        group_share_min_heartbeat_interval_ms=100,
    ).start()
    try:
        assert create_topic(b.port, TOPIC, 2) is ErrorCode.none
        reset = [("share.auto.offset.reset", SET, "earliest")]
        assert incremental(b.port, [(32, GROUP, reset)])[0][1] is ErrorCode.none
        produce(b.port, TOPIC, 0, b"a", b"b", b"c", b"d")
        produce(b.port, TOPIC, 1, b"e", b"f")
        yield b
    finally:
        b.stop()


@pytest.fixture
def member(broker: BrokerThread) -> Iterator[ShareConsumer]:
    """A member that consumed and accepted every record."""
    consumer = ShareConsumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "client.id": "w1"}
    )
    try:
        consumer.subscribe([TOPIC])
        got = 0
        deadline = time.monotonic() + 20
        while got < 6:
            assert time.monotonic() < deadline
            got += len(consumer.poll(0.2))
        consumer.commit_sync()
        yield consumer
    finally:
        consumer.close()


def _run(capsys: pytest.CaptureFixture[str], broker: BrokerThread, *argv: str) -> Any:
    assert main(["share-groups", *argv, "--bootstrap-server", broker.bootstrap]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--output" in argv else out


def test_list(
    broker: BrokerThread, member: ShareConsumer, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert _run(capsys, broker, "list", "--output", "json") == [{"group": GROUP, "state": "Stable"}]
    assert _run(capsys, broker, "list").split() == ["GROUP", "STATE", GROUP, "Stable"]


def test_describe_offsets_members_and_state(
    broker: BrokerThread, member: ShareConsumer, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    offsets = _run(capsys, broker, "describe", "--group", GROUP, "--output", "json")
    assert offsets["partitions"] == [
        {"topic": TOPIC, "partition": 0, "start_offset": 4, "lag": 0},
        {"topic": TOPIC, "partition": 1, "start_offset": 2, "lag": 0},
    ]
    members = _run(capsys, broker, "describe", "--group", GROUP, "--members", "--output", "json")
    (only,) = members["members"]
    assert only["member_id"] == member.member_id and only["client_id"] == "w1"
    assert only["assignment"] == ["jobs-0", "jobs-1"]
    state = _run(capsys, broker, "describe", "--group", GROUP, "--state", "--output", "json")
    assert (state["state"], state["members"], state["assignor"]) == ("Stable", 1, "simple")
    text = _run(capsys, broker, "describe", "--group", GROUP)
    assert [GROUP, TOPIC, "0", "4", "0"] in [line.split() for line in text.splitlines()]


def test_reset_offsets(
    broker: BrokerThread, member: ShareConsumer, capsys: pytest.CaptureFixture[str]
) -> None:
    reset = ["reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0", "--to-earliest"]
    # Not while the group has a member.
    argv = ["share-groups", *reset, "--execute", "--bootstrap-server", broker.bootstrap]
    assert main(argv) == 1
    assert "NON_EMPTY_GROUP" in capsys.readouterr().err
    member.close()
    planned = _run(capsys, broker, *reset, "--output", "json")
    assert planned == {
        "group": GROUP,
        "executed": False,
        "offsets": [{"topic": TOPIC, "partition": 0, "new": 0}],
    }
    done = _run(capsys, broker, *reset, "--execute", "--output", "json")
    assert done["executed"] is True
    offsets = _run(capsys, broker, "describe", "--group", GROUP, "--output", "json")
    assert [(p["partition"], p["start_offset"], p["lag"]) for p in offsets["partitions"]] == [
        (0, 0, 4),
        (1, 2, 0),
    ]
    future = _run(
        capsys,
        broker,
        "reset-offsets",
        "--group",
        GROUP,
        "--topic",
        TOPIC,
        "--to-datetime",
        "2100-01-01T00:00:00+00:00",
        "--dry-run",
    )
    assert [line.split() for line in future.splitlines()[1:3]] == [
        [GROUP, TOPIC, "0", "4"],
        [GROUP, TOPIC, "1", "2"],
    ]


def test_delete_offsets(
    broker: BrokerThread, member: ShareConsumer, capsys: pytest.CaptureFixture[str]
) -> None:
    member.close()
    capsys.readouterr()
    deleted = _run(capsys, broker, "delete-offsets", "--group", GROUP, "--topic", TOPIC)
    assert deleted.split() == ["TOPIC", "STATUS", TOPIC, "Successful"]
    offsets = _run(capsys, broker, "describe", "--group", GROUP, "--output", "json")
    assert offsets["partitions"] == []
