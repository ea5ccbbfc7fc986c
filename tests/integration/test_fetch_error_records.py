"""Every Fetch error answers its partition with an empty record set, never a
null one: librdkafka reads a null set as `invalid MessageSetSize -1` and drops
the whole response, so a client refused READ on one topic (Kafka's answer to a
topic it may describe but not read) would loop on protocol errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from acl_wire import STANDARD, add_acls
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.handlers.dispatch import dispatch
from kgroups.protocol.types import BrokerId, i32, i64
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType
from kgroups.security.peer import ConnectionSecurity

from broker_thread import BrokerThread
from raw_wire import decode_response, encode_request

ALICE = "User:alice"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD, super_users="User:admin").start()
    try:
        bt.call(lambda: bt.broker.create_topic("orders", 1, {}))  # type: ignore[union-attr]
        add_acls(
            bt,
            AclBinding(
                ResourceType.TOPIC,
                "orders",
                PatternType.LITERAL,
                ALICE,
                "*",
                Operation.DESCRIBE,
                Permission.ALLOW,
            ),
        )
        yield bt
    finally:
        bt.stop()


def _fetch(*topics: tuple[str, int], replica: int = -1) -> FetchRequest:
    return FetchRequest(
        replica_id=BrokerId(replica),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        topics=tuple(
            FetchTopic(
                topic=name,
                partitions=(
                    FetchPartition(
                        partition=i32(0), fetch_offset=i64(offset), partition_max_bytes=i32(1024)
                    ),
                ),
            )
            for name, offset in topics
        ),
        forgotten_topics_data=(),
    )


def _answer(bt: BrokerThread, principal: str, request: FetchRequest) -> Any:
    assert bt.broker is not None
    security = ConnectionSecurity("PLAINTEXT", "PLAINTEXT", principal)
    frame = bt.run(dispatch(bt.broker, encode_request(request)[4:], "10.0.0.1", security))
    assert frame is not None
    return decode_response(FetchRequest, frame[4:])


@pytest.mark.parametrize(
    ("principal", "request_", "errors"),
    [
        ("User:alice", _fetch(("orders", 0)), [ErrorCode.topic_authorization_failed]),
        ("User:bob", _fetch(("orders", 0)), [ErrorCode.topic_authorization_failed]),
        ("User:alice", _fetch(("orders", 0), replica=2), [ErrorCode.cluster_authorization_failed]),
        ("User:admin", _fetch(("missing", 0)), [ErrorCode.unknown_topic_or_partition]),
        ("User:admin", _fetch(("orders", 50)), [ErrorCode.offset_out_of_range]),
        (
            "User:alice",
            _fetch(("orders", 0), ("missing", 0)),
            [ErrorCode.topic_authorization_failed, ErrorCode.topic_authorization_failed],
        ),
    ],
    ids=["read denied", "describe denied", "follower denied", "unknown", "out of range", "mixed"],
)
def test_error_answers_carry_empty_records(
    broker: BrokerThread, principal: str, request_: FetchRequest, errors: list[ErrorCode]
) -> None:
    response = _answer(broker, principal, request_)
    got = [(p.error_code, p.records) for t in response.responses for p in t.partitions]
    assert got == [(e, b"") for e in errors]
