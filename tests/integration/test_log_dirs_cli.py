"""`kgroups log-dirs describe`, as kafka-log-dirs.sh: each broker's log
directories and the size of their partitions, as a table or Kafka's JSON,
and exit code 2 for a broker list it cannot use."""

from __future__ import annotations

import json

import pytest
from cluster_brokers import produce

from kgroups.cli import main
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread


def test_log_dirs_describe_as_json_and_as_a_table(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", "--partitions", "2", *b]) == 0
    assert main(["topics", "create", "other", *b]) == 0
    assert produce(broker.port, "orders", 1, b"x" * 50)[0] == ErrorCode.none
    capsys.readouterr()

    assert main(["log-dirs", "describe", "--topic-list", "orders", "--output", "json", *b]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["version"] == 1
    (only,) = printed["brokers"]
    assert only["broker"] == 0
    (log_dir,) = only["logDirs"]
    assert log_dir["logDir"] == str(broker.log_dir.absolute())
    assert log_dir["error"] is None
    assert log_dir["totalBytes"] > 0 and 0 < log_dir["usableBytes"] <= log_dir["totalBytes"]
    partitions = {p["partition"]: p for p in log_dir["partitions"]}
    assert set(partitions) == {"orders-0", "orders-1"}  # not "other"
    assert partitions["orders-0"] == {
        "partition": "orders-0",
        "size": 0,
        "offsetLag": 0,
        "isFuture": False,
    }
    assert partitions["orders-1"]["size"] > 50

    assert main(["log-dirs", "describe", "--broker-list", "0", *b]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "BROKER",
        "LOG-DIR",
        "PARTITION",
        "SIZE",
        "OFFSET-LAG",
        "IS-FUTURE",
        "ERROR",
    ]
    rows = {line.split()[2]: line.split() for line in lines[1:]}
    assert rows["other-0"] == [
        "0",
        str(broker.log_dir.absolute()),
        "other-0",
        "0",
        "0",
        "False",
        "-",
    ]
    assert {"orders-0", "orders-1", "other-0"} <= set(rows)


@pytest.mark.parametrize(
    ("brokers", "message"),
    [
        (
            "0,5",
            "The given brokers do not exist from --broker-list: 5. Current existent brokers: 0",
        ),
        ("0,x", "--broker-list: 'x' is not a broker id"),
        ("-1", "--broker-list: '-1' is not a broker id"),
    ],
)
def test_a_broker_list_it_cannot_use_exits_2(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str], brokers: str, message: str
) -> None:
    command = ["log-dirs", "describe", "--broker-list", brokers]
    assert main([*command, "--bootstrap-server", broker.bootstrap]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == f"kgroups: {message}"
    assert captured.out == ""


def test_describe_is_the_action(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["log-dirs"])
    assert exited.value.code == 2
