"""`kgroups acls add|list|remove` against a broker with ACLs on, as the
anonymous principal made super user; what it adds takes effect on the wire."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_wire import STANDARD, call_as
from kio.schema.heartbeat.v4 import HeartbeatRequest

from kgroups.cli import main
from kgroups.errors import ErrorCode
from kgroups.protocol.types import i32

from broker_thread import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(
        tmp_path, authorizer_class_name=STANDARD, super_users="User:ANONYMOUS"
    ).start()
    try:
        yield bt
    finally:
        bt.stop()


HEARTBEAT = HeartbeatRequest(
    group_id="payments-app", generation_id=i32(1), member_id="m", group_instance_id=None
)


def test_add_list_remove(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    denied = call_as(broker, "User:alice", HEARTBEAT).error_code
    assert denied == ErrorCode.group_authorization_failed

    add = ["acls", "add", "--allow-principal", "User:alice", "--operation", "read"]
    assert main([*add, "--group", "payments-", "--resource-pattern-type", "prefixed", *b]) == 0
    assert main([*add, "--topic", "orders", *b]) == 0
    capsys.readouterr()
    assert call_as(broker, "User:alice", HEARTBEAT).error_code != denied

    assert main(["acls", "list", "--group", "payments-", *b]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "GROUP PREFIXED payments-: User:alice from * ALLOW READ"
    ]
    assert main(["acls", "list", "--principal", "User:alice", *b]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2

    assert main(["acls", "remove", "--group", "payments-", *b]) == 0
    assert "removed GROUP PREFIXED payments-" in capsys.readouterr().out
    assert call_as(broker, "User:alice", HEARTBEAT).error_code == denied
    assert main(["acls", "list", *b]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC LITERAL orders: User:alice from * ALLOW READ"
    ]


def test_refused_without_cluster_alter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD).start()
    try:
        args = ["acls", "add", "--allow-principal", "User:a", "--operation", "READ", "--topic", "t"]
        assert main([*args, "--bootstrap-server", bt.bootstrap]) == 1
        assert "CLUSTER_AUTHORIZATION_FAILED" in capsys.readouterr().err
    finally:
        bt.stop()
