"""`kgroups quotas describe|alter` against an in-process broker, named as
kafka-configs.sh names quota entities: table and JSON output, and bad input."""

from __future__ import annotations

import json

import pytest

from kgroups.cli import main

from broker_thread import BrokerThread


def test_alter_and_describe(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    alice = ["--entity-type", "users", "--entity-name", "alice"]
    alice_any_client = [*alice, "--entity-type", "clients", "--entity-default"]
    argv = ["quotas", "alter", *alice, "--add-config", "producer_byte_rate=1048576"]
    assert main([*argv, "--add-config", "consumer_byte_rate=2097152", *b]) == 0
    assert capsys.readouterr().out == "Completed updating config for user-principal 'alice'.\n"
    argv = ["quotas", "alter", *alice_any_client, "--add-config", "request_percentage=12.5"]
    assert main([*argv, *b]) == 0
    assert capsys.readouterr().out == (
        "Completed updating config for user-principal 'alice', default client-id.\n"
    )
    ip = ["--entity-type", "ips", "--entity-default"]
    assert main(["quotas", "alter", *ip, "--add-config", "connection_creation_rate=10", *b]) == 0
    capsys.readouterr()

    assert main(["quotas", "describe", *alice, *b]) == 0
    assert capsys.readouterr().out == (
        "Quota configs for user-principal 'alice' are "
        "consumer_byte_rate=2097152, producer_byte_rate=1048576\n"
    )
    # As kafka-configs.sh: the entities of exactly the types named, any name.
    assert main(["quotas", "describe", "--entity-type", "users", *b]) == 0
    assert capsys.readouterr().out.startswith("Quota configs for user-principal 'alice' are")
    users_and_clients = ["--entity-type", "users", "--entity-type", "clients"]
    assert main(["quotas", "describe", *users_and_clients, *b]) == 0
    assert capsys.readouterr().out == (
        "Quota configs for user-principal 'alice', default client-id are request_percentage=12.5\n"
    )
    assert main(["quotas", "describe", "--output", "json", *b]) == 0
    described = json.loads(capsys.readouterr().out)
    assert {"entity": {"ip": None}, "values": {"connection_creation_rate": 10.0}} in described
    assert len(described) == 3

    argv = ["quotas", "alter", *alice, "--delete-config", "consumer_byte_rate,producer_byte_rate"]
    assert main([*argv, "--output", "json", *b]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "entity": {"user": "alice"},
        "validate_only": False,
        "ops": 2,
    }
    assert main(["quotas", "describe", *alice, *b]) == 0
    assert capsys.readouterr().out == "No quotas match.\n"


def test_refusals(broker: BrokerThread, capsys: pytest.CaptureFixture[str]) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    ip = ["--entity-type", "ips", "--entity-name", "10.0.0.1"]
    assert main(["quotas", "alter", *ip, "--add-config", "producer_byte_rate=1", *b]) == 1
    assert "INVALID_REQUEST: Invalid configuration key producer_byte_rate" in (
        capsys.readouterr().err
    )
    both = [*ip, "--entity-type", "users", "--entity-name", "alice"]
    assert main(["quotas", "alter", *both, "--add-config", "producer_byte_rate=1", *b]) == 1
    assert "INVALID_REQUEST" in capsys.readouterr().err
    users = ["--entity-type", "users", "--entity-name", "a"]
    assert main(["quotas", "alter", *users, "--add-config", "producer_byte_rate=x", *b]) == 2
    assert "not a number" in capsys.readouterr().err
    assert main(["quotas", "alter", *users, *b]) == 2
    assert "nothing to alter" in capsys.readouterr().err
    argv = ["quotas", "alter", "--entity-name", "a", "--add-config", "producer_byte_rate=1"]
    assert main([*argv, *b]) == 2
    assert "--entity-name must follow an --entity-type" in capsys.readouterr().err
    argv = ["quotas", "alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"]
    assert main([*argv, *b]) == 2
    assert "give --entity-name or --entity-default" in capsys.readouterr().err
    argv = ["quotas", "alter", *users, "--add-config", "producer_byte_rate=1", "--validate-only"]
    assert main([*argv, *b]) == 0
    assert capsys.readouterr().out == "Validated config for user-principal 'a'.\n"
    assert main(["quotas", "describe", *b]) == 0
    assert capsys.readouterr().out == "No quotas match.\n"
