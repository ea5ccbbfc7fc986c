"""What ends a `kgroups dev-cluster`'s store when the dev-cluster itself is
killed outright (kill -9, an OOM kill): nothing of it stays behind.

The brokers watch a pipe from the dev-cluster and stop on its EOF; PostgreSQL,
Patroni and etcd cannot. So the dev-cluster starts this small process in a
session of its own, holding the read end of that pipe. On EOF it kills the
processes it was given (``--kill``: Patroni, so that none restarts its
PostgreSQL, and etcd), shuts each PostgreSQL down at once (``--postgres``: the
postmaster named in the data directory's ``postmaster.pid``, looked up then,
as a failover may have restarted it), waits for the brokers (``--wait``) and
removes the directories (``--remove``). A dev-cluster that stops in order
stops everything itself and kills this process first.

    python -m kgroups.commands.dev_cluster_reaper --pipe FD [--kill PID]...
        [--postgres DATA_DIR]... [--wait PID]... [--remove DIR]...
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

STOP_TIMEOUT_S = 30.0


def start(pipe_fd: int, args: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start the reaper on the read end ``pipe_fd`` of the dev-cluster's pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, "--pipe", str(pipe_fd), *args],
        pass_fds=(pipe_fd,),
        start_new_session=True,  # Ctrl-C in the terminal is the dev-cluster's to handle
        stdin=subprocess.DEVNULL,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dev_cluster_reaper")
    parser.add_argument("--pipe", type=int, required=True)
    parser.add_argument("--kill", type=int, action="append", default=[])
    parser.add_argument("--postgres", type=Path, action="append", default=[])
    parser.add_argument("--wait", type=int, action="append", default=[])
    parser.add_argument("--remove", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while os.read(args.pipe, 4096):
            pass
    for pid in args.kill:
        _signal(pid, signal.SIGKILL)
    postmasters = [pid for data in args.postgres if (pid := _postmaster(data)) is not None]
    for pid in postmasters:
        _signal(pid, signal.SIGQUIT)  # immediate shutdown: its workers end with it
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for pid in [*postmasters, *args.wait]:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    for directory in args.remove:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _postmaster(data: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int((data / "postmaster.pid").read_text().split()[0])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone: its parent (the dead dev-cluster's) is init now.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    return True


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


if __name__ == "__main__":
    sys.exit(main())
