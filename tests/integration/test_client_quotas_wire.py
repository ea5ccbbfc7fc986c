"""DescribeClientQuotas and AlterClientQuotas on the wire: Kafka's entity
rules and error codes, describe filters, validate_only, ACLs, and quotas that
survive a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from acl_wire import STANDARD, add_acls, call_as
from client_quota_wire import alter, alter_request, describe, describe_request

from kgroups.errors import ErrorCode
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission
from kgroups.security.authorizer import ResourceType as R

from broker_thread import BrokerThread

EXACT, DEFAULT, ANY = 0, 1, 2
ALICE = (("user", "alice"),)
ALICE_APP = (("client-id", "app"), ("user", "alice"))
DEFAULT_CLIENT = (("client-id", None),)
IP = (("ip", "10.0.0.1"),)


@pytest.mark.parametrize("version", [0, 1])
def test_set_describe_remove(broker: BrokerThread, version: int) -> None:
    assert (
        alter(
            broker.port,
            [
                (ALICE, [("producer_byte_rate", 1048576), ("consumer_byte_rate", 2097152)]),
                (ALICE_APP, [("request_percentage", 12.5)]),
                (DEFAULT_CLIENT, [("producer_byte_rate", 1024)]),
                (IP, [("connection_creation_rate", 5)]),
            ],
            version=version,
        )
        == [(ErrorCode.none, None)] * 4
    )
    assert describe(broker.port, version=version) == {
        ALICE: {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0},
        ALICE_APP: {"request_percentage": 12.5},
        DEFAULT_CLIENT: {"producer_byte_rate": 1024.0},
        IP: {"connection_creation_rate": 5.0},
    }
    # Removing one key keeps the others; removing the last drops the entity.
    assert alter(broker.port, [(ALICE, [("consumer_byte_rate", None)])], version=version) == [
        (ErrorCode.none, None)
    ]
    assert alter(broker.port, [(IP, [("connection_creation_rate", None)])], version=version) == [
        (ErrorCode.none, None)
    ]
    described = describe(broker.port, version=version)
    assert isinstance(described, dict)
    assert described[ALICE] == {"producer_byte_rate": 1048576.0}
    assert IP not in described


def test_describe_filters(broker: BrokerThread) -> None:
    alter(
        broker.port,
        [
            (ALICE, [("producer_byte_rate", 1)]),
            (ALICE_APP, [("producer_byte_rate", 2)]),
            (DEFAULT_CLIENT, [("producer_byte_rate", 3)]),
            (IP, [("connection_creation_rate", 4)]),
        ],
    )
    port = broker.port
    assert set(describe(port, [("user", EXACT, "alice")])) == {ALICE, ALICE_APP}  # type: ignore[arg-type]
    assert set(describe(port, [("user", EXACT, "alice")], strict=True)) == {ALICE}  # type: ignore[arg-type]
    assert set(describe(port, [("client-id", DEFAULT, None)])) == {DEFAULT_CLIENT}  # type: ignore[arg-type]
    assert set(describe(port, [("client-id", ANY, None)])) == {ALICE_APP, DEFAULT_CLIENT}  # type: ignore[arg-type]
    assert set(describe(port, [("ip", ANY, None)])) == {IP}  # type: ignore[arg-type]
    assert describe(port, [("user", EXACT, "bob")]) == {}
    assert describe(port, strict=True) == {}
    assert describe(port, [("ip", ANY, None), ("user", ANY, None)]) == ErrorCode.invalid_request
    assert describe(port, [("user", EXACT, None)]) == ErrorCode.invalid_request
    assert describe(port, [("user", 9, None)]) == ErrorCode.invalid_request
    assert describe(port, [("group", ANY, None)]) == ErrorCode.unsupported_version


def test_invalid_entries_are_refused_one_by_one(broker: BrokerThread) -> None:
    answers = alter(
        broker.port,
        [
            ((("user", "alice"), ("ip", "10.0.0.1")), [("producer_byte_rate", 1)]),
            ((), [("producer_byte_rate", 1)]),
            ((("topic", "t"),), [("producer_byte_rate", 1)]),
            ((("user", ""),), [("producer_byte_rate", 1)]),
            (ALICE, [("connection_creation_rate", 1)]),
            (IP, [("producer_byte_rate", 1)]),
            ((("client-id", "app"),), [("producer_byte_rate", 1.5)]),
            ((("user", "bob"),), [("producer_byte_rate", 1), ("producer_byte_rate", 2)]),
            ((("ip", "nowhere"),), [("connection_creation_rate", 1)]),
            (DEFAULT_CLIENT, [("consumer_byte_rate", 1000)]),
        ],
    )
    codes = [code for code, _ in answers]
    assert codes == [ErrorCode.invalid_request] * 9 + [ErrorCode.none]
    messages = [m for _, m in answers]
    assert "Invalid configuration key connection_creation_rate" in str(messages[4])
    assert "must be a Long value" in str(messages[6])
    assert "Duplicate quota key producer_byte_rate" in str(messages[7])
    # Only the valid entry changed anything.
    assert describe(broker.port) == {DEFAULT_CLIENT: {"consumer_byte_rate": 1000.0}}


def test_an_entity_named_twice_is_refused(broker: BrokerThread) -> None:
    answers = alter(
        broker.port,
        [(ALICE, [("producer_byte_rate", 1)]), (ALICE, [("consumer_byte_rate", 1)])],
    )
    assert [code for code, _ in answers] == [ErrorCode.invalid_request] * 2
    assert describe(broker.port) == {}


def test_validate_only_changes_nothing(broker: BrokerThread) -> None:
    ok = alter(broker.port, [(ALICE, [("producer_byte_rate", 1)])], validate_only=True)
    bad = alter(broker.port, [(IP, [("producer_byte_rate", 1)])], validate_only=True)
    assert ok == [(ErrorCode.none, None)]
    assert bad[0][0] == ErrorCode.invalid_request
    assert describe(broker.port) == {}


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data").start()
    try:
        alter(b.port, [(ALICE_APP, [("producer_byte_rate", 4096)])])
        b.restart()
        assert describe(b.port) == {ALICE_APP: {"producer_byte_rate": 4096.0}}
        assert b.broker is not None
        assert b.broker.quotas.table.client_quota("producer_byte_rate", "alice", "app") is not None
    finally:
        b.stop()


def test_describe_needs_describe_configs_and_alter_needs_alter_configs_on_the_cluster(
    tmp_path: Path,
) -> None:
    bt = BrokerThread(tmp_path / "data", authorizer_class_name=STANDARD).start()
    try:
        carol = "User:carol"
        denied_alter = call_as(bt, carol, alter_request([(ALICE, [("producer_byte_rate", 1)])]))
        assert [e.error_code for e in denied_alter.entries] == [
            ErrorCode.cluster_authorization_failed
        ]
        denied = call_as(bt, carol, describe_request([]))
        assert denied.error_code == ErrorCode.cluster_authorization_failed
        for op in (Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS):
            add_acls(
                bt,
                AclBinding(
                    R.CLUSTER,
                    "kafka-cluster",
                    PatternType.LITERAL,
                    carol,
                    "*",
                    op,
                    Permission.ALLOW,
                ),
            )
        allowed = call_as(bt, carol, alter_request([(ALICE, [("producer_byte_rate", 1)])]))
        assert [e.error_code for e in allowed.entries] == [ErrorCode.none]
        described = call_as(bt, carol, describe_request([]))
        assert described.error_code == ErrorCode.none
        assert len(described.entries) == 1
    finally:
        bt.stop()


def test_a_type_named_twice_with_and_without_a_name_is_refused(broker: BrokerThread) -> None:
    twice = (("user", "alice"), ("user", None))
    answers = alter(broker.port, [(twice, [("producer_byte_rate", 1)])])
    assert answers[0][0] == ErrorCode.invalid_request
    assert "duplicate entity entry user" in str(answers[0][1])
