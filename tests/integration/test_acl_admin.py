"""CreateAcls, DescribeAcls, DeleteAcls through confluent-kafka's AdminClient,
as the anonymous principal made super user; bindings survive a restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_wire import STANDARD
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

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


def _admin(bt: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": bt.bootstrap})


READ_ORDERS = AclBinding(
    ResourceType.TOPIC,
    "orders",
    ResourcePatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermissionType.ALLOW,
)
WRITE_PAY = AclBinding(
    ResourceType.TOPIC,
    "pay-",
    ResourcePatternType.PREFIXED,
    "User:bob",
    "*",
    AclOperation.WRITE,
    AclPermissionType.DENY,
)
ALL_TOPICS = AclBindingFilter(
    ResourceType.TOPIC,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


def _describe(admin: AdminClient) -> set[AclBinding]:
    return set(admin.describe_acls(ALL_TOPICS).result(30))


def test_create_describe_delete_and_restart(broker: BrokerThread) -> None:
    admin = _admin(broker)
    for f in admin.create_acls([READ_ORDERS, WRITE_PAY]).values():
        f.result(30)
    assert _describe(admin) == {READ_ORDERS, WRITE_PAY}

    broker.restart()
    admin = _admin(broker)
    assert _describe(admin) == {READ_ORDERS, WRITE_PAY}

    bob = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:bob",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    (deleted,) = admin.delete_acls([bob]).values()
    assert deleted.result(30) == [WRITE_PAY]
    broker.restart()
    assert _describe(_admin(broker)) == {READ_ORDERS}


def test_invalid_binding_is_refused(broker: BrokerThread) -> None:
    bad = AclBinding(
        ResourceType.BROKER,
        "kafka",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    admin = _admin(broker)
    (f,) = admin.create_acls([bad]).values()
    with pytest.raises(Exception, match="cluster resource is named kafka-cluster"):
        f.result(30)


def test_without_authorizer_acl_changes_answer_security_disabled(tmp_path: Path) -> None:
    bt = BrokerThread(tmp_path).start()
    try:
        admin = _admin(bt)
        with pytest.raises(Exception, match=r"SECURITY_DISABLED|[Ss]ecurity"):
            admin.create_acls([READ_ORDERS])[READ_ORDERS].result(30)
    finally:
        bt.stop()
