"""A topic's configs changed by IncrementalAlterConfigs take effect on its
logs at once, without a restart: retention removes what the new limits
exclude, appends are checked against the new max.message.bytes."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import EARLIEST, list_offset, produce, wait_for
from config_admin_wire import SET, TOPIC, incremental
from topic_admin_wire import create

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

NONE = ErrorCode.none


def test_retention_and_batch_size_change_live(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", log_retention_check_interval_ms=100).start()
    try:
        assert create(b.port, "t", 1, segment_bytes="200").error_code == NONE
        old = int(time.time() * 1000) - 60_000  # kept by the broker's 7 days
        for value in (b"a" * 50, b"b" * 50, b"c" * 50, b"d" * 50):
            assert produce(b.port, "t", 0, value, timestamp=old)[0] == NONE
        assert list_offset(b.port, "t", 0, EARLIEST) == (NONE, 0)
        ops = [("retention.ms", SET, "1000"), ("max.message.bytes", SET, "120")]
        assert incremental(b.port, [(TOPIC, "t", ops)]) == [("t", NONE, None)]
        wait_for(lambda: list_offset(b.port, "t", 0, EARLIEST)[1] >= 3)
        assert produce(b.port, "t", 0, b"x" * 200)[0] == ErrorCode.message_too_large
        assert produce(b.port, "t", 0, b"x")[0] == NONE
    finally:
        b.stop()
