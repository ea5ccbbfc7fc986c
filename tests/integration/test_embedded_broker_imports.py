"""What ``from kgroups.testing import EmbeddedBroker`` costs a fresh interpreter:
no client consumer, no Spark, no PostgreSQL driver, no compression codec, no
hypothesis, and hypothesis imported afterwards works in full."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def test_starting_a_broker_leaves_heavy_modules_unimported() -> None:
    out = _run(
        "import json, sys\n"
        "from kgroups.testing import EmbeddedBroker\n"
        "with EmbeddedBroker() as broker:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(out))
    for heavy in (
        "hypothesis",
        "pyspark",
        "psycopg",
        "cramjam",
        "lz4",
        "zstandard",
        "kgroups.client.async_consumer",
        "kgroups.network.sasl_authenticator",
        "kgroups.runtime.peer_brokers",
        "kgroups.handlers.produce",
        # Loaded with the first group or transactional request, or the first
        # `__consumer_offsets` / `__transaction_state` load.
        "kgroups.coordinator.shard",
        "kgroups.coordinator.consumer.coordinator",
        "kgroups.coordinator.consumer_assignors.uniform",
        "kgroups.assignors.cooperative_sticky",
        "kgroups.transactions.shard",
        "kgroups.transactions.messages",
        # The group APIs' and telemetry's schemas come with their first request.
        "kio.schema.join_group",
        "kio.schema.offset_commit",
        "kio.schema.offset_fetch",
        "kio.schema.push_telemetry",
        # Only when metrics.port is set; the fault client only for a process broker.
        "kgroups.server.metrics_endpoint",
        "urllib.request",
        # The crc32c package's version lookup (records/checksum.py).
        "importlib.metadata",
        # A thread broker has no use for the subprocess broker (nor its ctypes).
        "kgroups.testing.process_broker",
        "ctypes",
        # Pushed client metrics are read with the first push, kept with the
        # metrics endpoint.
        "kgroups.metrics.otlp",
        "kgroups.metrics.client_metric_series",
        # Share partitions' state machine, sessions and stored records come
        # with the first share fetch (or stored state to load).
        "kgroups.share_partitions.partition",
        "kgroups.share_partitions.sessions",
        "kgroups.share_partitions.state_records",
    ):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in loaded), heavy


def test_a_group_request_loads_the_coordinator() -> None:
    pytest.importorskip("confluent_kafka")
    out = _run(
        "import json, sys\n"
        "from confluent_kafka import ConsumerGroupTopicPartitions\n"
        "from confluent_kafka.admin import AdminClient\n"
        "from kgroups.testing import EmbeddedBroker\n"
        "with EmbeddedBroker() as broker:\n"
        "    admin = AdminClient({'bootstrap.servers': broker.bootstrap_servers})\n"
        "    asked = [ConsumerGroupTopicPartitions('g')]\n"
        "    admin.list_consumer_group_offsets(asked)['g'].result(30)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    assert "kgroups.coordinator.shard" in set(json.loads(out))


def test_hypothesis_imported_afterwards_works() -> None:
    pytest.importorskip("hypothesis")
    out = _run(
        "from kgroups.testing import EmbeddedBroker\n"
        "from hypothesis import given, strategies as st\n"
        "seen = []\n"
        "@given(st.integers(0, 9))\n"
        "def t(x):\n"
        "    seen.append(x)\n"
        "t()\n"
        "print(len(seen) > 0)\n"
    )
    assert out.strip() == "True"


def test_kio_keeps_its_strategies_when_hypothesis_came_first() -> None:
    pytest.importorskip("hypothesis")
    out = _run(
        "import hypothesis.strategies as st\n"
        "from kgroups.testing import EmbeddedBroker\n"
        "from kio.static.primitive import i32\n"
        "print(st.from_type(i32).example() in range(-2**31, 2**31))\n"
    )
    assert out.strip() == "True"


def test_the_command_line_imports_kio_without_hypothesis() -> None:
    """Every `kgroups` process (a broker under `kgroups serve` too) starts without
    kio's hypothesis strategies: on a machine with hypothesis installed they cost
    a fresh interpreter more than the rest of its imports."""
    out = _run("import sys\nimport kgroups.cli\nprint('hypothesis' in sys.modules)\n")
    assert out.strip() == "False"


def test_the_command_line_parser_imports_what_its_command_needs() -> None:
    """`kgroups serve` (a process broker) builds the parser of every command: it
    reads the installed distributions' metadata only for ``--version``, and
    imports the admin client only for a command that talks to a broker."""
    out = _run(
        "import json, sys\n"
        "from kgroups.cli import _parser\n"
        "_parser().parse_args(['serve'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(out))
    assert "importlib.metadata" not in loaded
    assert "kgroups.client.admin" not in loaded
