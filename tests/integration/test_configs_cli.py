"""`kgroups configs describe|alter` against an in-process broker, as
kafka-configs.sh is used: table and JSON output, and bad input."""

from __future__ import annotations

import json

import pytest

from kgroups.cli import main

from broker_thread import BrokerThread


def test_alter_and_describe_a_topic(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    topic = ["--entity-type", "topics", "--entity-name", "orders"]
    assert main(["topics", "create", "orders", *b]) == 0
    capsys.readouterr()
    argv = [
        "configs",
        "alter",
        *topic,
        "--add-config",
        "retention.ms=1000,cleanup.policy=[delete,compact]",
    ]
    assert main([*argv, *b]) == 0
    assert capsys.readouterr().out == "Completed updating config for topic orders.\n"
    assert main(["configs", "describe", *topic, *b]) == 0
    assert capsys.readouterr().out == (
        "Dynamic configs for topic orders are:\n"
        "  cleanup.policy=delete,compact sensitive=false source=DYNAMIC_TOPIC_CONFIG\n"
        "  retention.ms=1000 sensitive=false source=DYNAMIC_TOPIC_CONFIG\n"
    )
    argv = ["configs", "alter", *topic, "--delete-config", "retention.ms"]
    assert main([*argv, "--subtract-config", "cleanup.policy=[delete]", *b]) == 0
    capsys.readouterr()
    assert main(["configs", "describe", *topic, "--output", "json", *b]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "name": "cleanup.policy",
            "value": "compact",
            "source": "DYNAMIC_TOPIC_CONFIG",
            "sensitive": False,
            "read_only": False,
        }
    ]
    assert main(["configs", "describe", *topic, "--all", *b]) == 0
    assert (
        "  retention.ms=604800000 sensitive=false source=DEFAULT_CONFIG" in capsys.readouterr().out
    )


def test_refusals(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    assert main(["topics", "create", "orders", *b]) == 0
    capsys.readouterr()
    topic = ["configs", "alter", "--entity-type", "topics", "--entity-name", "orders"]
    assert main([*topic, "--add-config", "retention.ms=x", *b]) == 1
    assert (
        "INVALID_CONFIG: Invalid value x for configuration retention.ms" in capsys.readouterr().err
    )
    assert main([*topic, "--add-config", "retention.ms", *b]) == 2
    assert "--add-config 'retention.ms': expected key=value" in capsys.readouterr().err
    assert main([*topic, *b]) == 2
    assert "nothing to alter" in capsys.readouterr().err
    assert main(["configs", "alter", "--entity-type", "topics", "--add-config", "a=1", *b]) == 2
    assert "--entity-name is required" in capsys.readouterr().err
    missing = ["--entity-type", "topics", "--entity-name", "missing"]
    assert main(["configs", "alter", *missing, "--add-config", "retention.ms=1", *b]) == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err
    assert main(["configs", "describe", *missing, *b]) == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err
    argv = [
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-default",
        "--add-config",
        "a=1",
    ]
    assert main([*argv, *b]) == 2
    assert "--entity-default is for --entity-type brokers" in capsys.readouterr().err


def test_brokers_and_groups(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    default = ["--entity-type", "brokers", "--entity-default"]
    assert main(["configs", "alter", *default, "--add-config", "log.retention.ms=1000", *b]) == 0
    assert capsys.readouterr().out == "Completed updating config for default brokers.\n"
    assert main(["configs", "describe", *default, *b]) == 0
    assert capsys.readouterr().out == (
        "Dynamic configs for default brokers are:\n"
        "  log.retention.ms=1000 sensitive=false source=DYNAMIC_DEFAULT_BROKER_CONFIG\n"
    )
    me = ["--entity-type", "brokers", "--entity-name", str(broker.config.broker_id)]
    assert main(["configs", "alter", *me, "--add-config", "listeners=PLAINTEXT://:1", *b]) == 1
    assert "INVALID_REQUEST: Cannot update these configs dynamically" in capsys.readouterr().err
    group = ["--entity-type", "groups", "--entity-name", "g"]
    argv = ["configs", "alter", *group, "--add-config", "consumer.heartbeat.interval.ms=6000"]
    assert main([*argv, *b]) == 0
    capsys.readouterr()
    assert main(["configs", "describe", *group, "--output", "json", *b]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "name": "consumer.heartbeat.interval.ms",
            "value": "6000",
            "source": "GROUP_CONFIG",
            "sensitive": False,
            "read_only": False,
        }
    ]
