"""Batches decompressed on several threads at once (the loop, the log
cleaner, client telemetry's worker) come out whole: no codec state is shared
between threads."""

from __future__ import annotations

import os
import threading

import pytest

from kgroups.records.compression import GZIP, LZ4, SNAPPY, ZSTD, compress, decompress


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_concurrent_decompression_is_exact(codec: int) -> None:
    payloads = [os.urandom(64) * 5000 + bytes([i]) * 50_000 for i in range(4)]
    compressed = [compress(codec, p) for p in payloads]
    wrong: list[object] = []

    def work(i: int) -> None:
        for _ in range(30):
            try:
                if decompress(codec, compressed[i]) != payloads[i]:
                    wrong.append(i)
            except Exception as e:  # a shared context garbled by another thread
                wrong.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
