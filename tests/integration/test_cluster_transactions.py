"""Cluster mode does not take transactions yet: transactional produce and
transactional offset commits get a clear error (never accepted and lost), and
read_committed reads everything (nothing is unstable). The partition logs
already take markers (test_cluster_txn_markers)."""

from __future__ import annotations

import socket
from pathlib import Path

from cluster_brokers import create_topic, leaders, running_cluster, wait_for
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from test_transaction_coordinator_wire import TXN, describe
from test_transactions_wire import COMMITTED, fetch, latest, produce, write_marker
from txn_offsets_wire import fetch as fetch_offsets
from txn_offsets_wire import txn_commit

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from group_requests import commit_request
from raw_wire import call_once


def test_transactions_are_refused_in_cluster_mode(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 1) as (broker,):
        port = broker.port
        assert create_topic(port, "t", 1) == ErrorCode.none
        wait_for(lambda: leaders(port, "t") == {0: 1})
        wait_for(lambda: produce(port, [b"plain"]) == ErrorCode.none)
        assert (
            produce(port, [b"txn"], pid=10, seq=0, txn_id="tx")
            == ErrorCode.transactional_id_authorization_failed
        )
        assert write_marker(port, 10, commit=True) == ErrorCode.none
        answer = fetch(port, COMMITTED)
        assert answer.error_code == ErrorCode.none
        assert answer.last_stable_offset == answer.high_watermark == 2
        assert latest(port, COMMITTED) == 2


def test_no_transaction_coordinator_in_cluster_mode(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 1) as (broker,):
        port = broker.port
        found = call_once(port, FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(TXN,)))
        (coordinator,) = found.coordinators
        assert coordinator.error_code == ErrorCode.coordinator_not_available
        assert "single broker" in (coordinator.error_message or "")
        assert describe(port).error_code == ErrorCode.coordinator_not_available


def test_transactional_offset_commits_are_refused_in_cluster_mode(
    tmp_path: Path, store_url: str
) -> None:
    """No transaction can end here, so an offset commit inside one would stay
    pending for ever, and hide the group's acknowledged offset behind it."""
    with running_cluster(tmp_path, store_url, 1) as (broker,):
        port = broker.port
        assert create_topic(port, "t", 1) == ErrorCode.none

        def committed() -> bool:
            answer = call_once(port, commit_request("g", 5))
            return bool(answer.topics[0].partitions[0].error_code == ErrorCode.none)

        wait_for(committed)
        with socket.create_connection(("127.0.0.1", port), 30) as s:
            refused = txn_commit(s, "g", {("t", 0): 9}, producer_id=10)
            assert refused == {("t", 0): ErrorCode.transactional_id_authorization_failed}
            group_error, offsets = fetch_offsets(s, "g", {"t": [0]}, require_stable=True)
        assert group_error == ErrorCode.none
        assert offsets == {("t", 0): (5, ErrorCode.none)}
