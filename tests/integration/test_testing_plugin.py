"""The pytest plugin and EmbeddedBroker as a user meets them: the example
project's own test suite, run by pytest in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "consumer-service"


@pytest.mark.parametrize(
    ("options", "scope", "passed"),
    [
        ([], "function", 5),
        # As set in an ini file. The two kill -9 tests start brokers of their own,
        # whatever the scope: they ran above already.
        (["-o", "kafka_broker_scope=session", "-k", "not kill_9"], "session", 3),
        # The command line over the ini file: one test that uses the broker shows it.
        (
            ["-o", "kafka_broker_scope=session", "--kafka-broker-scope=function", "-k", "orders"],
            "function",
            1,
        ),
    ],
)
def test_example_project_suite_passes(options: list[str], scope: str, passed: int) -> None:
    pytest.importorskip("confluent_kafka")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *options,
            "--setup-show",
        ],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"{passed} passed" in result.stdout
    # The plugin's broker fixture ran with the scope asked for.
    letter = "S" if scope == "session" else "F"
    assert f"SETUP    {letter} kafka_broker" in result.stdout
