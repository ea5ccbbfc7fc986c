"""`kgroups configs --entity-type client-metrics`, as kafka-configs.sh sets
and shows client metrics subscriptions (KIP-714)."""

from __future__ import annotations

import json

import pytest

from kgroups.cli import main

from broker_thread import BrokerThread


def test_set_describe_and_delete_subscriptions(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    kind = ["--entity-type", "client-metrics"]
    argv = ["configs", "alter", *kind, "--entity-name", "producers", "--add-config"]
    added = "metrics=[org.apache.kafka.producer.],interval.ms=1000,match=[client_id=app-.*]"
    assert main([*argv, added, *b]) == 0
    assert capsys.readouterr().out == "Completed updating config for client-metric producers.\n"
    assert (
        main(["configs", "alter", *kind, "--entity-name", "all", "--add-config", "metrics=*", *b])
        == 0
    )
    capsys.readouterr()

    assert main(["configs", "describe", *kind, "--entity-name", "producers", *b]) == 0
    assert capsys.readouterr().out == (
        "Dynamic configs for client-metric producers are:\n"
        "  interval.ms=1000 sensitive=false source=CLIENT_METRICS_CONFIG\n"
        "  match=client_id=app-.* sensitive=false source=CLIENT_METRICS_CONFIG\n"
        "  metrics=org.apache.kafka.producer. sensitive=false source=CLIENT_METRICS_CONFIG\n"
    )
    # Without a name: every subscription.
    assert main(["configs", "describe", *kind, "--output", "json", *b]) == 0
    every = json.loads(capsys.readouterr().out)
    assert sorted(every) == ["all", "producers"]
    assert every["all"] == [
        {
            "name": "metrics",
            "value": "*",
            "source": "CLIENT_METRICS_CONFIG",
            "sensitive": False,
            "read_only": False,
        }
    ]

    refused = ["configs", "alter", *kind, "--entity-name", "producers", "--add-config"]
    assert main([*refused, "interval.ms=10", *b]) != 0
    assert "interval must be between 100 and 3600000" in capsys.readouterr().err

    deleted = ["configs", "alter", *kind, "--entity-name", "all", "--delete-config", "metrics"]
    assert main([*deleted, *b]) == 0
    capsys.readouterr()
    assert main(["configs", "describe", *kind, *b]) == 0
    assert capsys.readouterr().out.startswith("Dynamic configs for client-metric producers are:")
