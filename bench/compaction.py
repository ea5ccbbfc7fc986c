"""Log compaction benchmark: clean time and records/s for one compacted partition.

Writes N records of about 100 bytes over K keys (in batches of 100 records, as a
producer would send them), rolls so that everything is in closed segments, then
times one cleaning round: planning, both passes on this thread (the server runs
them on a worker), the swap (the only part on the event loop) and removing the
replaced files. Prints one JSON object. Usage:

    .venv/bin/python bench/compaction.py [--records 1000000] [--keys 10000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import encode_batch
from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.log import SegmentLog

NOW = 1_700_000_000_000
BATCH = 100
SEGMENT_MS = 60_000


def build_log(directory: Path, records: int, keys: int, segment_bytes: int) -> SegmentLog:
    config = LogConfig(cleanup_policy="compact", segment_bytes=segment_bytes, segment_ms=SEGMENT_MS)
    plog = SegmentLog.open(directory, config, NOW)
    value = b"v" * 80
    for start in range(0, records, BATCH):
        batch = [
            (b"key-%08d" % (i % keys), value, (), NOW + i // BATCH)
            for i in range(start, min(start + BATCH, records))
        ]
        plog.append(encode_batch(batch), NOW, from_client=False)
    # A record far enough ahead rolls the log: the active segment is never cleaned.
    plog.append_records([(b"last", b"", (), NOW + records + 2 * SEGMENT_MS)], NOW)
    return plog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--segment-bytes", type=int, default=16 * 1024 * 1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plog = build_log(Path(tmp) / "bench-0", args.records, args.keys, args.segment_bytes)
        bytes_before = plog.size
        segments_before = len(plog.segments)
        started = time.perf_counter()
        plan = plan_cleaning(plog, NOW + args.records)
        assert plan is not None
        result = LogCleaner().clean(plan)
        cleaned = time.perf_counter()
        assert result.commit()
        swapped = time.perf_counter()
        result.remove_replaced_files()
        finished = time.perf_counter()
        stats = result.stats
        print(
            json.dumps(
                {
                    "benchmark": "compaction",
                    "records": args.records,
                    "keys": args.keys,
                    "record_bytes": round(stats.bytes_read / max(1, stats.records_read), 1),
                    "segment_bytes": args.segment_bytes,
                    "clean_s": round(finished - started, 3),
                    "swap_on_loop_ms": round((swapped - cleaned) * 1000, 3),
                    "remove_files_ms": round((finished - swapped) * 1000, 3),
                    "records_per_s": round(stats.records_read / (finished - started)),
                    "records_kept": stats.records_kept,
                    "bytes_before": bytes_before,
                    "bytes_after": plog.size,
                    "segments_before": segments_before,
                    "segments_after": len(plog.segments),
                }
            )
        )
        plog.close()


if __name__ == "__main__":
    main()
