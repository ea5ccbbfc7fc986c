"""The `kgroups` command line against an in-process broker."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from kgroups.cli import main

from broker_thread import BrokerThread


def test_topics_produce_consume(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", "--partitions", "3", *b]) == 0
    assert main(["topics", "create", "compacted", "--config", "cleanup.policy=compact", *b]) == 0
    capsys.readouterr()
    assert main(["topics", "list", *b]) == 0
    assert capsys.readouterr().out.split() == ["compacted", "orders"]

    monkeypatch.setattr(sys, "stdin", io.StringIO("alice:1\nbob:2\nalice:3\n"))
    assert main(["produce", "orders", "--key-separator", ":", *b]) == 0
    assert "Produced 3 record(s)." in capsys.readouterr().err

    assert (
        main(["consume", "orders", "--from-beginning", "--print-key", "--max-messages", "3", *b])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == ["alice\t1", "alice\t3", "bob\t2"]
    # One key, one partition, in order.
    assert [line for line in lines if line.startswith("alice")] == ["alice\t1", "alice\t3"]

    assert main(["topics", "describe", "orders", *b]) == 0
    described = capsys.readouterr().out
    assert "Partitions: 3" in described
    ends = [int(line.rsplit(" ", 1)[1]) for line in described.splitlines() if "End offset" in line]
    assert sum(ends) == 3

    assert main(["topics", "delete", "orders", *b]) == 0
    capsys.readouterr()
    assert main(["topics", "list", *b]) == 0
    assert capsys.readouterr().out.split() == ["compacted"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topics", "create", "t", "--config", "retention.ms=soon"], "INVALID_CONFIG"),
        (["topics", "create", "t", "--config", "no.such.config=1"], "Unknown topic config"),
        (["topics", "create", "bad/name"], "INVALID_TOPIC_EXCEPTION"),
        (["topics", "create", "t", "--partitions", "0"], "INVALID_PARTITIONS"),
        (["topics", "delete", "missing"], "UNKNOWN_TOPIC_OR_PARTITION"),
        (["consume", "missing", "--timeout-ms", "100"], "does not exist"),
    ],
)
def test_helpful_errors(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main([*argv, "--bootstrap-server", broker.bootstrap]) == 1
    assert message in capsys.readouterr().err


def test_unreachable_broker(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "list", "--bootstrap-server", "127.0.0.1:1"]) == 1
    assert "no bootstrap server reachable" in capsys.readouterr().err


def test_serve_refuses_bad_configuration() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgroups", "serve", "--override", "num.partitions=zero"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "invalid value 'zero' for num.partitions" in result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "kgroups", "serve", "--override", "zookeeper.connnect=x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "unknown configuration key 'zookeeper.connnect'" in result.stderr


def test_help_everywhere() -> None:
    for argv in (
        ["--help"],
        ["serve", "--help"],
        ["topics", "create", "--help"],
        ["groups", "reset-offsets", "--help"],
        ["produce", "--help"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "kgroups", *argv], capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0 and "usage: kgroups" in result.stdout
