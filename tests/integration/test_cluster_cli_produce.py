"""`kgroups produce` against a cluster: each partition's records go to its own
leader, whichever broker the command bootstraps from."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cluster_brokers import create_topic, fetch, leaders, running_cluster

from kgroups.cli import main
from kgroups.errors import ErrorCode


def test_produce_reaches_the_leader_of_every_partition(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_cluster(tmp_path, store_url, 3) as brokers:
        port = brokers[0].port
        assert create_topic(port, "t", 3) == ErrorCode.none
        led_by = leaders(port, "t")
        assert len(set(led_by.values())) == 3
        monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"v{i}\n" for i in range(6))))
        assert main(["produce", "t", "--bootstrap-server", f"127.0.0.1:{port}"]) == 0
        got = []
        for partition, node in led_by.items():
            error, values = fetch(brokers[node - 1].port, "t", partition, 0)
            assert error == ErrorCode.none
            got += values
        assert sorted(got) == [f"v{i}".encode() for i in range(6)]
