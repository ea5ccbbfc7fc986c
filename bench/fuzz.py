"""Protocol fuzzing against a `kgroups serve` subprocess.

Every frame is a valid request of some API and version the broker serves (with
and without nulls in its nullable fields), broken at random: a length pushed
to an extreme, flipped bytes, a cut, trailing bytes, a damaged header. Each is
followed on its connection by an ApiVersions probe; a frame counts as handled
when the probe is answered or the broker closes the connection. A broker that
dies counts as a crash and is restarted.

Prints one JSON object: frames sent, crashes, internal errors (the broker's
"internal error" and failed-task log lines), frames per second, and the
broker's peak RSS. Usage:

    .venv/bin/python bench/fuzz.py [--frames 1000000] [--workers 8] [--seed 1] [--sasl]

With --sasl the broker listens on SASL_PLAINTEXT, so every frame arrives
before authentication (only ApiVersions and the SASL exchange may be answered).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import struct
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from kgroups.testing.process_broker import free_port

from process_broker import BrokerProcess
from wire_fuzz import Seed, framed, mutant, seeds

PROBE_CORRELATION = 0x5EED
PROBE = framed(struct.pack(">hhih", 18, 0, PROBE_CORRELATION, 5) + b"probe")
# Log lines that mean a request hurt the broker instead of being answered
# (the first two are logged by the broker; the others are the last words of
# an aborting process).
INTERNAL_ERRORS = re.compile(
    r"internal error|coordinator task failed|Fatal Python error|memory allocation of"
)
# A request a handler parks (a long-polling fetch, a join waiting for its
# group) is given this long before its connection is dropped.
STALL_SECONDS = 5.0


class Fuzzer:
    def __init__(self, broker: BrokerProcess, frames: int, seed: int) -> None:
        self.broker = broker
        self.frames = frames
        self.rng = random.Random(seed)
        self.seeds: list[Seed] = seeds()
        self.sent = 0
        self.crashes = 0
        self.stalls = 0
        self.peak_rss_kib = 0

    async def worker(self) -> None:
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while self.sent < self.frames:
            self.sent += 1
            frame = framed(mutant(self.rng, self.rng.choice(self.seeds)))
            try:
                if conn is None:
                    conn = await asyncio.open_connection("127.0.0.1", self.broker.port)
                reader, writer = conn
                writer.write(frame + PROBE)
                if not await asyncio.wait_for(_probe_answered(reader), STALL_SECONDS):
                    _close(conn)
                    conn = None
            except TimeoutError:
                self.stalls += 1
                _close(conn)
                conn = None
            except OSError:
                _close(conn)
                conn = None
                await self.check_alive()

    async def check_alive(self) -> None:
        proc = self.broker.proc
        if proc is not None and proc.poll() is not None:
            self.crashes += 1
            self.broker.start()

    def sample_rss(self) -> None:
        proc = self.broker.proc
        if proc is None or proc.poll() is not None:
            return
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                self.peak_rss_kib = max(self.peak_rss_kib, int(line.split()[1]))


async def _probe_answered(reader: asyncio.StreamReader) -> bool:
    """Read responses up to the probe's; False when the broker closed instead."""
    while True:
        try:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            response = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        if struct.unpack_from(">i", response)[0] == PROBE_CORRELATION:
            return True


def _close(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
    if conn is not None:
        conn[1].transport.abort()  # a reset leaves no TIME_WAIT behind


async def run(args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        sasl = (
            (
                f"listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
            )
            if args.sasl
            else ()
        )
        broker = BrokerProcess(Path(tmp) / "data", port, *sasl, log_level=args.log_level).start()
        fuzzer = Fuzzer(broker, args.frames, args.seed)
        started = time.monotonic()
        workers = [asyncio.create_task(fuzzer.worker()) for _ in range(args.workers)]
        try:
            while not all(w.done() for w in workers):
                await asyncio.wait(workers, timeout=1.0)
                fuzzer.sample_rss()
                await fuzzer.check_alive()
            for w in workers:
                w.result()
            elapsed = time.monotonic() - started
        finally:
            broker.stop()
        internal = _internal_errors(broker.log_path.read_text(errors="replace"))
        return {
            "frames": fuzzer.sent,
            "crashes": fuzzer.crashes,
            "internal_errors": sum(internal.values()),
            "internal_error_kinds": dict(internal.most_common(20)),
            "stalled_requests": fuzzer.stalls,
            "frames_per_second": round(fuzzer.sent / elapsed),
            "seconds": round(elapsed, 1),
            "broker_peak_rss_mib": round(fuzzer.peak_rss_kib / 1024, 1),
        }


def _internal_errors(log: str) -> Counter[str]:
    """Internal-error log lines, counted by the exception they end with (the
    last line of the traceback that follows them)."""
    kinds: Counter[str] = Counter()
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if not INTERNAL_ERRORS.search(line):
            continue
        last = line
        for following in lines[i + 1 :]:
            if _TIMESTAMP.match(following):
                break
            last = following
        kinds[last.strip()[:200]] += 1
    return kinds


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sasl", action="store_true", help="fuzz a SASL_PLAINTEXT listener")
    ap.add_argument("--log-level", default="ERROR", help="the broker's; ERROR keeps the log small")
    print(json.dumps(asyncio.run(run(ap.parse_args()))))


if __name__ == "__main__":
    main()
