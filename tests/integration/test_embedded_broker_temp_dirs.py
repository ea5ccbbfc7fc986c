"""A thread broker's temporary directory, left by a SIGKILLed test runner, is
removed by the first EmbeddedBroker a later process starts; a live process's
directories are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

# Starts a thread broker, says where its data is, and dies as a SIGKILLed runner.
KILLED_RUNNER = """
import os, signal
from kgroups.testing import EmbeddedBroker
broker = EmbeddedBroker()
print(broker.data_dir, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""

# Starts and stops a broker, as the next test run does.
NEXT_RUNNER = """
from kgroups.testing import EmbeddedBroker
with EmbeddedBroker():
    pass
"""


def _python(code: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_killed_runners_directory_goes_with_the_next_broker(tmp_path: Path) -> None:
    killed = _python(KILLED_RUNNER, tmp_path)
    assert killed.returncode == -signal.SIGKILL
    left = Path(killed.stdout.strip())
    assert left.is_dir() and tmp_path in left.parents

    # A directory of this (live) process, as a concurrent test run has.
    live_parent = tmp_path / f"kgroups-pid{os.getpid()}-live"
    live_parent.mkdir()
    (live_parent / "kgroups-data").mkdir()

    done = _python(NEXT_RUNNER, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not left.exists()
    assert (live_parent / "kgroups-data").is_dir()
    # The next runner removed its own parent at exit: nothing else is left.
    assert sorted(p.name for p in tmp_path.iterdir()) == [live_parent.name]
