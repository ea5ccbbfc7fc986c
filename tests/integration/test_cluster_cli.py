"""`kgroups cluster describe` and the coordinator in `kgroups groups describe`,
against a broker alone: it is every partition's leader and every group's
coordinator."""

from __future__ import annotations

import asyncio
import json

import pytest

from kgroups.cli import main
from kgroups.client.admin import Admin

from broker_thread import BrokerThread


def _commit(bootstrap: str, group: str) -> None:
    async def go() -> None:
        admin = Admin(bootstrap)
        try:
            await admin.commit(group, {("orders", 0): 3})
        finally:
            await admin.close()

    asyncio.run(go())


def test_cluster_describe_shows_brokers_leaders_and_coordinators(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert broker.broker is not None
    node, port = broker.broker.broker_id, broker.broker.port
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", "--partitions", "2", *b]) == 0
    _commit(broker.bootstrap, "g")
    capsys.readouterr()

    assert main(["cluster", "describe", "--output", "json", *b]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["brokers"] == [
        {"broker_id": node, "host": "127.0.0.1", "port": port, "rack": None}
    ]
    orders = [p for p in described["partitions"] if p["topic"] == "orders"]
    assert [(p["partition"], p["leader"]) for p in orders] == [(0, node), (1, node)]
    offsets = [p for p in described["partitions"] if p["topic"] == "__consumer_offsets"]
    assert len(offsets) == 5 and {p["leader"] for p in offsets} == {node}
    assert described["groups"] == [
        {
            "group": "g",
            "state": "Empty",
            "coordinator": {"broker_id": node, "host": "127.0.0.1", "port": port},
        }
    ]

    assert main(["cluster", "describe", *b]) == 0
    text = capsys.readouterr().out
    assert f"1 broker(s), controller {node}" in text
    assert any(
        line.split() == ["g", "Empty", str(node), f"127.0.0.1:{port}"] for line in text.splitlines()
    )


def test_groups_describe_names_the_coordinator(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert broker.broker is not None
    node, port = broker.broker.broker_id, broker.broker.port
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", *b]) == 0
    _commit(broker.bootstrap, "g")
    capsys.readouterr()
    assert main(["groups", "describe", "g", "--output", "json", *b]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["coordinator"] == {"broker_id": node, "host": "127.0.0.1", "port": port}
    assert main(["groups", "describe", "g", *b]) == 0
    assert f"coordinator broker {node} (127.0.0.1:{port})" in capsys.readouterr().out
