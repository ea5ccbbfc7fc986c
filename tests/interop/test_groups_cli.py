"""`kgroups groups` against a broker with real consumer groups."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

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
        {"group": "g", "type": "classic", "state": "Empty", "protocol_type": "consumer"}
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


def test_list_and_describe_show_a_consumer_group_beside_a_classic_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer

    broker = BrokerThread(
        tmp_path / "data",
        **{
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.min.heartbeat.interval.ms": "100",
        },
    ).start()
    consumer: Any = None
    try:
        b = ["--bootstrap-server", broker.bootstrap]
        assert main(["topics", "create", "cg", "--partitions", "2", *b]) == 0
        _produce(broker.bootstrap, "cg", 10)
        assert len(_consume_and_commit(broker.bootstrap, "old-style", "cg", 10)) == 10
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "new-style",
                "group.protocol": "consumer",
                "client.id": "reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["cg"])
        read = 0
        deadline = time.time() + 30
        while (read < 10 or len(consumer.assignment()) < 2) and time.time() < deadline:
            m = consumer.poll(0.1)
            if m is not None and m.error() is None:
                read += 1
        assert read == 10 and len(consumer.assignment()) == 2
        consumer.commit(asynchronous=False)
        _produce(broker.bootstrap, "cg", 3)  # three records behind on partition 0
        capsys.readouterr()

        assert main(["groups", "list", "--output", "json", *b]) == 0
        assert json.loads(capsys.readouterr().out) == [
            {
                "group": "new-style",
                "type": "consumer",
                "state": "Stable",
                "protocol_type": "consumer",
            },
            {
                "group": "old-style",
                "type": "classic",
                "state": "Empty",
                "protocol_type": "consumer",
            },
        ]
        assert main(["groups", "list", *b]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert listed[0].split() == ["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]
        assert [line.split() for line in listed[1:]] == [
            ["new-style", "consumer", "Stable", "consumer"],
            ["old-style", "classic", "Empty", "consumer"],
        ]

        assert main(["groups", "describe", "new-style", "--output", "json", *b]) == 0
        described = json.loads(capsys.readouterr().out)
        assert described["type"] == "consumer" and described["state"] == "Stable"
        assert described["group_epoch"] >= 1
        assert described["assignment_epoch"] == described["group_epoch"]
        assert described["assignor"] == "uniform"
        [member] = described["members"]
        assert member["client_id"] == "reader" and member["group_instance_id"] is None
        assert member["member_epoch"] == described["group_epoch"]
        assert member["subscribed_topics"] == ["cg"] and member["subscribed_topic_regex"] is None
        assert member["assignment"] == member["target_assignment"] == ["cg-0", "cg-1"]
        assert member["revoking"] == member["receiving"] == []
        assert [
            (p["partition"], p["committed_offset"], p["log_end_offset"], p["lag"], p["member_id"])
            for p in described["partitions"]
        ] == [(0, 10, 13, 3, member["member_id"]), (1, None, 0, None, member["member_id"])]

        assert main(["groups", "describe", "new-style", *b]) == 0
        head, members, lags = capsys.readouterr().out.strip().split("\n\n")
        epoch = described["group_epoch"]
        assert head.startswith(
            f"Group new-style: Stable (consumer group), group epoch {epoch}, "
            f"assignment epoch {epoch}, assignor uniform, 1 member(s), coordinator broker"
        )
        header, row = members.splitlines()
        assert header.split() == [
            "MEMBER-ID",
            "INSTANCE-ID",
            "CLIENT-ID",
            "HOST",
            "EPOCH",
            "SUBSCRIPTION",
            "ASSIGNMENT",
            "TARGET",
            "TO-REVOKE",
            "TO-RECEIVE",
        ]
        assert row.split() == [
            member["member_id"],
            "-",
            "reader",
            member["host"],
            str(epoch),
            "cg",
            "cg-0,cg-1",
            "cg-0,cg-1",
            "-",
            "-",
        ]
        assert lags.splitlines()[1].split()[:5] == ["cg", "0", "10", "13", "3"]

        # Offsets of a consumer group with members cannot be reset.
        reset = ["groups", "reset-offsets", "new-style", "--topic", "cg", "--to-earliest"]
        assert main([*reset, "--execute", *b]) == 1
        assert "1 active member(s)" in capsys.readouterr().err

        # The classic group is described as before.
        assert main(["groups", "describe", "old-style", "--output", "json", *b]) == 0
        classic = json.loads(capsys.readouterr().out)
        assert classic["type"] == "classic" and classic["state"] == "Empty"
        assert "group_epoch" not in classic
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
