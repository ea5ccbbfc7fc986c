"""A broker cut off from the store while its clients still reach it steps
down on its own clock: past the instant it can no longer vouch for its lease it
answers as a broker that coordinates nothing, so the old coordinator's last
successful answer to a group comes before the new coordinator's first.

Two brokers on one PostgreSQL; broker 1 reaches it through a TCP proxy that
the test cuts (silence, not a closed connection). A classic group and a
consumer group coordinated by broker 1 keep heartbeating at broker 1 while
broker 2 takes their partitions over and a member joins there; a produce to a
partition broker 1 led is never acknowledged by it after broker 2 took it.
"""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cluster_brokers import (
    HEARTBEAT_MS,
    SESSION_MS,
    cluster_broker,
    create_topic,
    leaders,
    metadata,
    produce,
    wait_for,
)
from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i8, i32, i32Timedelta
from tcp_proxy import TcpProxy

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, TopicName

from group_requests import commit_request
from raw_wire import call_once

_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
_NO_CHANGE = i32Timedelta.parse(datetime.timedelta(milliseconds=-1))
_OVERRIDES = ("group.initial.rebalance.delay.ms=0",)


def _through(proxy: TcpProxy, url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) > 1 else host))


def _coordinator(port: int, group: str) -> int:
    """The broker id FindCoordinator names, or -1 when it names none."""
    response = call_once(
        port,
        FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)),
        timeout=10,
    )
    (found,) = response.coordinators
    return int(found.node_id) if found.error_code == ErrorCode.none else -1


def _group_led_by(ports: tuple[int, int], broker_id: int, prefix: str) -> str:
    """A group both brokers name ``broker_id`` the coordinator of."""
    for i in range(200):
        group = f"{prefix}-{i}"
        deadline = time.monotonic() + 15
        while (nodes := {_coordinator(port, group) for port in ports}) != {broker_id}:
            if len(nodes) == 1 and -1 not in nodes:
                break  # another broker's group
            assert time.monotonic() < deadline, f"no agreed coordinator for {group}"
            time.sleep(0.1)
        else:
            return group
    raise AssertionError(f"no group of broker {broker_id}")


def _join(port: int, group: str, member_id: str = "") -> Any:
    return call_once(
        port,
        JoinGroupRequest(
            group_id=GroupId(group),
            session_timeout=_TIMEOUT,
            rebalance_timeout=_TIMEOUT,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
        ),
        timeout=10,
    )


def _classic_member(port: int, group: str) -> tuple[str, int]:
    joined = _join(port, group)
    if joined.error_code == ErrorCode.member_id_required:
        joined = _join(port, group, joined.member_id)
    assert joined.error_code == ErrorCode.none
    synced = call_once(
        port,
        SyncGroupRequest(
            group_id=GroupId(group),
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),),
        ),
        timeout=10,
    )
    assert synced.error_code == ErrorCode.none
    return joined.member_id, int(joined.generation_id)


def _heartbeat(port: int, group: str, member: str, generation: int) -> ErrorCode:
    response = call_once(
        port,
        HeartbeatRequest(
            group_id=GroupId(group),
            generation_id=i32(generation),
            member_id=member,
            group_instance_id=None,
        ),
        timeout=5,
    )
    return ErrorCode(response.error_code)


def _consumer_heartbeat(port: int, group: str, member: str, epoch: int) -> Any:
    return call_once(
        port,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId(group),
            member_id=member,
            member_epoch=i32(epoch),
            instance_id=None,
            rack_id=None,
            rebalance_timeout=_TIMEOUT if epoch == 0 else _NO_CHANGE,
            subscribed_topic_names=(TopicName("t"),) if epoch == 0 else None,
            server_assignor=None,
            topic_partitions=() if epoch == 0 else None,
        ),
        timeout=5,
    )


def _fetch_ok(port: int, group: str) -> bool:
    response = call_once(
        port,
        OffsetFetchRequest(
            groups=(OffsetFetchRequestGroup(group_id=GroupId(group), topics=None),),
            require_stable=False,
        ),
        timeout=5,
    )
    return bool(response.groups[0].error_code == ErrorCode.none)


def _quiet(step: Any, *args: Any) -> Any:
    """One request's answer, or None when the broker did not answer in time."""
    try:
        return step(*args)
    except (OSError, TimeoutError):
        return None


def test_a_broker_cut_from_the_store_stops_coordinating_before_another_takes_over(
    tmp_path: Path, store_url: str
) -> None:
    store = urlsplit(store_url)
    with TcpProxy(store.hostname or "127.0.0.1", store.port or 5432) as proxy:
        b1 = cluster_broker(tmp_path, _through(proxy, store_url), 1, *_OVERRIDES)
        b2 = cluster_broker(tmp_path, store_url, 2, *_OVERRIDES)
        try:
            b1.start()
            b2.start()
            wait_for(lambda: len(metadata(b1.port).brokers) == 2)
            # Broker 2's joining evens the spread of leaders: let that settle
            # (a turn of each broker) before choosing broker 1's groups.
            time.sleep(3 * HEARTBEAT_MS / 1000)
            ports = (b1.port, b2.port)
            classic = _group_led_by(ports, 1, "classic")
            consumer = _group_led_by(ports, 1, "consumer")
            member, generation = _classic_member(b1.port, classic)
            assert call_once(b1.port, commit_request(classic, 5), timeout=10).topics
            joined = _consumer_heartbeat(b1.port, consumer, "", 0)
            assert joined.error_code == ErrorCode.none
            c_member, c_epoch = joined.member_id, int(joined.member_epoch)

            assert create_topic(b1.port, "t", 2) == ErrorCode.none
            time.sleep(3 * HEARTBEAT_MS / 1000)  # the new topic's leaders settle too
            partition = next(p for p, leader in leaders(b2.port, "t").items() if leader == 1)
            assert produce(b1.port, "t", partition, b"before")[0] == ErrorCode.none

            proxy.cut()
            cut_at = time.monotonic()
            old_produce: list[tuple[float, ErrorCode]] = []

            def produce_at_broker_1() -> None:
                answer = _quiet(produce, b1.port, "t", partition, b"cut off")
                if answer is not None:
                    old_produce.append((time.monotonic(), answer[0]))

            producing = threading.Thread(target=produce_at_broker_1)
            producing.start()
            old_ok = {classic: 0.0, consumer: 0.0}  # last success at broker 1
            new_ok: dict[str, float] = {}  # first success at broker 2
            named_itself: list[float] = []
            deadline = cut_at + SESSION_MS / 1000 + 30
            while len(new_ok) < 3 and time.monotonic() < deadline:
                if _quiet(_heartbeat, b1.port, classic, member, generation) == ErrorCode.none:
                    old_ok[classic] = time.monotonic()
                answer = _quiet(_consumer_heartbeat, b1.port, consumer, c_member, c_epoch)
                if answer is not None and answer.error_code == ErrorCode.none:
                    old_ok[consumer] = time.monotonic()
                for group in (classic, consumer):
                    if _quiet(_coordinator, b1.port, group) == 1:
                        named_itself.append(time.monotonic())
                if classic not in new_ok and _quiet(_fetch_ok, b2.port, classic):
                    new_ok[classic] = time.monotonic()
                if "produce" not in new_ok:
                    answer = _quiet(produce, b2.port, "t", partition, b"taken over")
                    if answer is not None and answer[0] == ErrorCode.none:
                        new_ok["produce"] = time.monotonic()
                if consumer not in new_ok:
                    answer = _quiet(_consumer_heartbeat, b2.port, consumer, "", 0)
                    if answer is not None and answer.error_code == ErrorCode.none:
                        new_ok[consumer] = time.monotonic()
                time.sleep(0.05)
            producing.join(30)
            assert set(new_ok) == {classic, consumer, "produce"}, f"broker 2 took only {new_ok}"
            for answered_at, error in old_produce:
                assert error != ErrorCode.none or answered_at < new_ok["produce"]
            for group in (classic, consumer):
                assert old_ok[group] < new_ok[group], group
                # And broker 1 stopped within its own session timeout of the cut.
                assert old_ok[group] - cut_at < SESSION_MS / 1000, group
            assert all(t < min(new_ok.values()) for t in named_itself)
        finally:
            proxy.heal()
            b1.stop()
            b2.stop()
