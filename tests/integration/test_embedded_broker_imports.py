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
    ):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in loaded), heavy


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
