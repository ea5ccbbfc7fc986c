"""IncrementalAlterConfigs on groups (KIP-848's per-group configs), on a broker
alone: checked against the broker's group.consumer.* bounds as Kafka's
GroupConfig does (GroupConfigTest), reported by DescribeConfigs, used by the
group's coordinator at the next heartbeat, kept across a restart."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

from config_admin_wire import APPEND, DELETE, GROUP, SET, configs, incremental, legacy
from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, TopicName, i8, i32

from broker_thread import BrokerThread
from raw_wire import call

NONE = ErrorCode.none
INVALID_CONFIG = ErrorCode.invalid_config
GROUP_CONFIG = 8
DEFAULT_CONFIG = 5
SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
# A share group's configs (KIP-932), described for every group as Kafka does.
SHARE_DEFAULTS = {
    "share.session.timeout.ms": ("45000", DEFAULT_CONFIG),
    "share.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG),
    "share.record.lock.duration.ms": ("30000", DEFAULT_CONFIG),
    "share.auto.offset.reset": ("latest", DEFAULT_CONFIG),
    "share.isolation.level": ("read_uncommitted", DEFAULT_CONFIG),
}


def _first_heartbeat_interval(port: int, group: str) -> int:
    with socket.create_connection(("127.0.0.1", port), 30) as s:
        found, _ = call(
            s, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(GroupId(group),))
        )
        assert found.coordinators[0].error_code is NONE
        beat, _ = call(
            s,
            ConsumerGroupHeartbeatRequest(
                group_id=GroupId(group),
                member_id="m-" + group,
                member_epoch=i32(0),
                rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
                subscribed_topic_names=(TopicName("t"),),
                topic_partitions=(),
            ),
        )
        assert beat.error_code is NONE, beat.error_message
        interval: int = beat.heartbeat_interval // timedelta(milliseconds=1)
        return interval


def test_group_configs_are_checked_described_and_used(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data").start()
    try:
        port = b.port
        assert configs(port, GROUP, "g") == {
            SESSION: ("45000", DEFAULT_CONFIG),
            HEARTBEAT: ("5000", DEFAULT_CONFIG),
            **SHARE_DEFAULTS,
        }
        ops = [(SESSION, SET, "50000"), (HEARTBEAT, SET, "7000")]
        assert incremental(port, [(GROUP, "g", ops)]) == [("g", NONE, None)]
        assert configs(port, GROUP, "g") == {
            SESSION: ("50000", GROUP_CONFIG),
            HEARTBEAT: ("7000", GROUP_CONFIG),
            **SHARE_DEFAULTS,
        }
        assert configs(port, GROUP, "other")[HEARTBEAT] == ("5000", DEFAULT_CONFIG)
        assert _first_heartbeat_interval(port, "g") == 7000
        assert _first_heartbeat_interval(port, "other") == 5000

        answers = incremental(
            port,
            [
                (GROUP, "a", [(SESSION, SET, "44999")]),
                (GROUP, "b", [(SESSION, SET, "60001")]),
                (GROUP, "c", [(HEARTBEAT, SET, "4999")]),
                (GROUP, "d", [(HEARTBEAT, SET, "15001")]),
                (GROUP, "e", [("consumer.nope", SET, "1")]),
                (GROUP, "f", [(SESSION, SET, "soon")]),
                (GROUP, "g", [(SESSION, APPEND, "1")]),
            ],
        )
        min_s, max_s = (
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        )
        min_h = "group.consumer.min.heartbeat.interval.ms"
        max_h = "group.consumer.max.heartbeat.interval.ms"
        assert answers == [
            ("a", INVALID_CONFIG, f"{SESSION} must be greater than or equal to {min_s}"),
            ("b", INVALID_CONFIG, f"{SESSION} must be less than or equal to {max_s}"),
            ("c", INVALID_CONFIG, f"{HEARTBEAT} must be greater than or equal to {min_h}"),
            ("d", INVALID_CONFIG, f"{HEARTBEAT} must be less than or equal to {max_h}"),
            ("e", INVALID_CONFIG, "Unknown group config name: consumer.nope"),
            (
                "f",
                INVALID_CONFIG,
                f"Invalid value soon for configuration {SESSION}: Not a number of type INT",
            ),
            ("g", INVALID_CONFIG, f"Can't APPEND to key {SESSION} because its type is not LIST."),
        ]
        assert incremental(port, [(GROUP, "g", [(HEARTBEAT, DELETE, None)])]) == [("g", NONE, None)]
        # AlterConfigs knows topics and brokers only, as in Kafka.
        assert legacy(port, [(GROUP, "h", {SESSION: "55000"})]) == [
            ("h", ErrorCode.invalid_request, "Unknown resource type 32")
        ]
        assert incremental(port, [(GROUP, "h", [(SESSION, SET, "55000")])]) == [("h", NONE, None)]
        # A share group's text configs take Kafka's values only.
        bad_reset = [("share.auto.offset.reset", SET, "sometime")]
        assert incremental(port, [(GROUP, "s", bad_reset)]) == [
            (
                "s",
                INVALID_CONFIG,
                "Invalid value sometime for configuration share.auto.offset.reset: "
                "String must be one of: latest, earliest",
            )
        ]
        reset = [("share.auto.offset.reset", SET, "earliest")]
        assert incremental(port, [(GROUP, "s", reset)]) == [("s", NONE, None)]
        assert configs(port, GROUP, "s")["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data").start()
    try:
        assert configs(b.port, GROUP, "g") == {
            SESSION: ("50000", GROUP_CONFIG),
            HEARTBEAT: ("5000", DEFAULT_CONFIG),
            **SHARE_DEFAULTS,
        }
        assert configs(b.port, GROUP, "h")[SESSION] == ("55000", GROUP_CONFIG)
    finally:
        b.stop()
