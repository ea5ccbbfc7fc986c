"""Transaction markers written to partitions led in cluster mode (WriteTxnMarkers):
an abort is told to read_committed fetches by its leader, and, read from the
store's index, by the next one after a kill -9; the coordinator epoch of the
last marker fences an older coordinator there too."""

from __future__ import annotations

from pathlib import Path

from cluster_brokers import SESSION_MS, create_topic, leaders, running_cluster, wait_for
from test_transactions_wire import COMMITTED, data_values, fetch, produce, write_marker

from kgroups.errors import ErrorCode


def test_an_abort_is_told_by_the_leader_and_after_kill_9_by_the_next_one(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "t", 1) == ErrorCode.none
        wait_for(lambda: set(leaders(ports[1], "t").values()) <= {1, 2})
        leader = leaders(ports[1], "t")[0]
        other = 3 - leader
        assert produce(ports[leader], [b"a"]) == ErrorCode.none  # offset 0
        # Producer 10's transaction wrote nothing here: its abort is its marker alone.
        assert write_marker(ports[leader], 10, commit=False, coordinator_epoch=3) == ErrorCode.none
        assert produce(ports[leader], [b"b"]) == ErrorCode.none  # offset 2

        answer = fetch(ports[leader], COMMITTED)
        assert answer.last_stable_offset == answer.high_watermark == 3
        assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(10, 1)]
        assert data_values(answer.records) == [b"a", b"b"]

        brokers[leader - 1].kill()
        wait_for(lambda: leaders(ports[other], "t")[0] == other, SESSION_MS / 1000 + 10)
        # The next leader holds none of those batches in memory: the store answers.
        answer = fetch(ports[other], COMMITTED)
        assert answer.error_code == ErrorCode.none
        assert answer.last_stable_offset == answer.high_watermark == 3
        assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(10, 1)]
        assert data_values(answer.records) == [b"a", b"b"]
        # A marker from an older coordinator than producer 10's last one is refused.
        stale = write_marker(ports[other], 10, commit=True, coordinator_epoch=2)
        assert stale == ErrorCode.transaction_coordinator_fenced
        assert write_marker(ports[other], 10, commit=True, coordinator_epoch=3) == ErrorCode.none
