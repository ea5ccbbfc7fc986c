"""CPU time of a durable offset commit inside the broker, without sockets.

A broker runs in this process (on uvloop, with `kgroups serve`'s collector
thresholds and log.flush.interval.messages=1); 64 committers each send the
10-partition OffsetCommit v9 of bench/offsets.py back to back, handed to the
broker as its connections hand a request over: the connection's fast path
first (handlers/fast_commit.py), then ``dispatch``. `--general` skips the fast
path. Prints the process's CPU time per commit (the median of `--runs`);
`--profile FILE` writes a cProfile of one more run.

    .venv/bin/python bench/commit_cpu.py [--commits 20000] [--runs 5] [--general]
        [--profile out.prof] [--override KEY=VALUE ...]

Under ``valgrind --tool=callgrind`` the instructions of two runs of different
lengths give the instructions per commit, which a loaded machine leaves alone.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop

from kgroups.config.broker_config import BrokerConfig
from kgroups.handlers.dispatch import dispatch
from kgroups.server.broker import Broker
from kgroups.testing.defaults import broker_properties

sys.path.insert(0, str(Path(__file__).resolve().parent))
from offsets import ONE_TOPIC, commit_errors, commit_frame

COMMITTERS = 64
_GC_THRESHOLDS = (20_000, 20, 50)  # as `kgroups serve` sets them

Handle = Callable[[bytes], Awaitable[bytes | None]]


def handler(broker: Broker, general: bool) -> tuple[Handle, str]:
    """What a connection does with one request frame (without its size), and
    which path that is (a broker without the fast path has only the general one)."""

    async def general_path(request: bytes) -> bytes | None:
        return await dispatch(broker, request, "127.0.0.1")

    if general:
        return general_path, "general"
    try:
        from kgroups.handlers.fast_commit import OFFSET_COMMIT_PREFIX, answer_commit
    except ImportError:
        return general_path, "general"

    async def fast_path(request: bytes) -> bytes | None:
        if request.startswith(OFFSET_COMMIT_PREFIX):
            committed = answer_commit(broker, request, "127.0.0.1")
            if committed is not None:
                return await committed
        return await dispatch(broker, request, "127.0.0.1")

    return fast_path, "fast"


async def committer(handle: Handle, request: bytes, commits: int) -> None:
    for _ in range(commits):
        response = await handle(request)
        assert response is not None
        errors = commit_errors(response[4:])
        assert len(errors) == 10 and not any(errors), errors


async def run_once(handle: Handle, commits: int) -> float:
    """CPU seconds per commit over ``commits`` commits of 64 committers."""
    each = commits // COMMITTERS
    frames = [commit_frame(f"c{i}", 1, ONE_TOPIC)[4:] for i in range(COMMITTERS)]
    started = time.process_time()
    await asyncio.gather(*(committer(handle, f, each) for f in frames))
    return (time.process_time() - started) / (each * COMMITTERS)


async def main_async(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    overrides = dict(item.split("=", 1) for item in args.override)
    props = broker_properties(data, 0, {"log.flush.interval.messages": "1", **overrides})
    broker = Broker(BrokerConfig(props))
    await broker.start()
    try:
        broker.create_topic("t", ONE_TOPIC["t"], {})
        handle, path = handler(broker, args.general)
        await run_once(handle, COMMITTERS * 20)  # groups created, code warm
        per_commit = [await run_once(handle, args.commits) for _ in range(args.runs)]
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            await run_once(handle, args.commits)
            profiler.disable()
            profiler.dump_stats(args.profile)
    finally:
        await broker.stop()
    print(
        json.dumps(
            {
                "bench": "commit_cpu",
                "path": path,
                "committers": COMMITTERS,
                "partitions_per_commit": 10,
                "cpu_us_per_commit": round(statistics.median(per_commit) * 1e6, 1),
                "runs_us": [round(x * 1e6, 1) for x in per_commit],
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--general", action="store_true", help="every commit through dispatch")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of one more run")
    ap.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting (offsets.commit.timeout.ms=600000 under valgrind, say)",
    )
    args = ap.parse_args()
    gc.set_threshold(*_GC_THRESHOLDS)
    uvloop.run(main_async(args))


if __name__ == "__main__":
    main()
