"""`kgroups topics alter` and `kgroups records delete` against an in-process
broker: their table and JSON output, and their answers to bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_brokers import EARLIEST, list_offset, produce

from kgroups.cli import main

from broker_thread import BrokerThread


def test_alter_adds_partitions(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", "--partitions", "2", *b]) == 0
    assert main(["topics", "alter", "--topic", "orders", "--partitions", "3", *b]) == 0
    assert capsys.readouterr().out == (
        "Created topic orders with 2 partition(s).\nTopic orders now has 3 partition(s).\n"
    )
    argv = ["topics", "alter", "--topic", "orders", "--partitions", "5", "--output", "json"]
    assert main([*argv, *b]) == 0
    assert json.loads(capsys.readouterr().out) == {"topic": "orders", "partitions": 5}
    assert main(["topics", "describe", "orders", *b]) == 0
    assert "Partitions: 5" in capsys.readouterr().out

    assert main(["topics", "alter", "--topic", "orders", "--partitions", "4", *b]) == 1
    assert "INVALID_PARTITIONS: The topic orders currently has 5" in capsys.readouterr().err
    assert main(["topics", "alter", "--topic", "missing", "--partitions", "4", *b]) == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err
    assert main(["topics", "alter", "--topic", "orders", "--partitions", "0", *b]) == 2
    assert "--partitions must be at least 1" in capsys.readouterr().err


def test_records_delete(
    broker: BrokerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", "--partitions", "2", *b]) == 0
    for value in (b"a", b"b", b"c", b"d"):
        assert produce(broker.port, "orders", 0, value)[0].name == "none"
    capsys.readouterr()
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "orders", "partition": 0, "offset": 3},
                    {"topic": "orders", "partition": 1, "offset": -1},
                ],
                "version": 1,
            }
        )
    )
    assert main(["records", "delete", "--offset-json-file", str(offsets), *b]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC   PARTITION  LOW-WATERMARK  ERROR",
        "orders  0          3              -",
        "orders  1          0              -",
    ]
    assert list_offset(broker.port, "orders", 0, EARLIEST)[1] == 3

    offsets.write_text('{"partitions": [{"topic": "orders", "partition": 0, "offset": 9}]}')
    argv = ["records", "delete", "--offset-json-file", str(offsets), "--output", "json"]
    assert main([*argv, *b]) == 1  # a partition refused
    assert json.loads(capsys.readouterr().out) == {
        "partitions": [
            {
                "topic": "orders",
                "partition": 0,
                "low_watermark": None,
                "error": "OFFSET_OUT_OF_RANGE",
            }
        ]
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read --offset-json-file"),
        ("{not json", "is not JSON"),
        ("[]", "expected an object with 'partitions'"),
        ('{"partitions": [], "version": 1}', "'partitions' must be a non-empty list"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "version": 2}',
            "version 2",
        ),
        ('{"partitions": [{"partition": 0, "offset": 1}]}', "needs a 'topic'"),
        ('{"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}', "needs a 'partition'"),
        ('{"partitions": [{"topic": "t", "partition": 0, "offset": -2}]}', "needs an 'offset'"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1},'
            ' {"topic": "t", "partition": 0, "offset": 2}]}',
            "duplicate topic partitions: t-0",
        ),
    ],
)
def test_records_delete_refuses_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "offsets.json"
    if content is not None:
        path.write_text(content)
    argv = ["records", "delete", "--offset-json-file", str(path)]
    assert main([*argv, "--bootstrap-server", "127.0.0.1:1"]) == 2
    assert message in capsys.readouterr().err


def test_missing_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["topics", "alter", "--topic", "t"], ["records", "delete"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert "required" in capsys.readouterr().err
