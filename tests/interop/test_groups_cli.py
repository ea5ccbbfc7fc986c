"""`kgroups groups` against a broker with real consumer groups."""

from __future__ import annotations

import json
import time

import pytest

from kgroups.cli import main

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _consume_and_commit(bootstrap: str, group: str, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    values: list[bytes] = []
    deadline = time.time() + 30
    while len(values) < count and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            values.append(m.value())
    c.commit(asynchronous=False)
    c.close()
    return values


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    assert p.flush(10) == 0


def test_reset_offsets_then_consume_from_the_new_position(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "t", "--partitions", "1", *b]) == 0
    _produce(broker.bootstrap, "t", 10)
    assert len(_consume_and_commit(broker.bootstrap, "g", "t", 10)) == 10
    capsys.readouterr()

    assert main(["groups", "describe", "g", "--output", "json", *b]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["state"] == "Empty"
    assert [(p["committed_offset"], p["lag"]) for p in described["partitions"]] == [(10, 0)]

    # A dry run changes nothing.
    assert main(["groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "4", *b]) == 0
    assert "dry run" in capsys.readouterr().out
    assert main(["groups", "describe", "g", "--output", "json", *b]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][0]["committed_offset"] == 10

    assert (
        main(
            ["groups", "reset-offsets", "g", "--topic", "t:0", "--to-offset", "4", "--execute", *b]
        )
        == 0
    )
    assert _consume_and_commit(broker.bootstrap, "g", "t", 6) == [
        f"v{i}".encode() for i in range(4, 10)
    ]

    capsys.readouterr()
    assert main(["groups", "list", "--output", "json", *b]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"group": "g", "state": "Empty", "protocol_type": "consumer"}
    ]
    assert main(["groups", "delete", "g", *b]) == 0
    assert main(["groups", "describe", "g", *b]) == 1
    assert "GROUP_ID_NOT_FOUND" in capsys.readouterr().err


def test_reset_is_refused_while_the_group_has_members(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer

    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "busy", "--partitions", "1", *b]) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "busy"})
    c.subscribe(["busy"])
    try:
        deadline = time.time() + 20
        while not c.assignment() and time.time() < deadline:
            c.poll(0.2)
        assert (
            main(
                [
                    "groups",
                    "reset-offsets",
                    "busy",
                    "--topic",
                    "busy",
                    "--to-earliest",
                    "--execute",
                    *b,
                ]
            )
            == 1
        )
        assert "active member" in capsys.readouterr().err
    finally:
        c.close()
