"""The broker's cost of taking one produced batch: validation, the topic's
compression.type (kept as the producer sent it, or rebuilt in the topic's
codec) and offset stamping, without the disk write. Prints one JSON object
per case: microseconds per batch, best of several rounds. Usage:

    .venv/bin/python bench/produce_stamping.py [--records 100] [--bytes 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import time

from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import StampingLog, stamp
from kgroups.records.batch import encode_batch
from kgroups.records.compression import GZIP, LZ4, NONE, ZSTD

CASES = (
    ("producer", NONE),
    ("producer", GZIP),
    ("zstd", NONE),
    ("zstd", GZIP),
    ("zstd", LZ4),
    ("uncompressed", GZIP),
    ("lz4", ZSTD),
)
CODEC_NAMES = {NONE: "none", GZIP: "gzip", LZ4: "lz4", ZSTD: "zstd"}


class _Log(StampingLog):
    def __init__(self, config: LogConfig) -> None:
        self.config = config
        self.producers = ProducerStateManager()
        self.leader_epoch = 0

    @property
    def log_start_offset(self) -> int:
        return 0


def measure(topic_type: str, codec: int, records: int, size: int, rounds: int) -> float:
    payload = encode_batch(
        [(None, b"x" * size, [], 1_700_000_000_000 + i) for i in range(records)],
        compression=codec,
    )
    log = _Log(LogConfig().with_overrides({"compression.type": topic_type}))
    calls = 200
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            stamp(log, payload, 0, 0, from_client=True)
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--bytes", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    for topic_type, codec in CASES:
        us = measure(topic_type, codec, args.records, args.bytes, args.rounds)
        print(
            json.dumps(
                {
                    "bench": "produce_stamping",
                    "compression.type": topic_type,
                    "batch_codec": CODEC_NAMES[codec],
                    "records": args.records,
                    "record_bytes": args.bytes,
                    "us_per_batch": round(us, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
