"""zstd batches decompressed on several threads at once (the loop, the
cleaner's worker, rebuilding produced batches in a topic's codec) come out
whole: each thread has its own decompressor (sharing one corrupts output and
can crash the process, so the check runs in a child process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import random, threading
    from kgroups.records.compression import ZSTD, compress, decompress

    payloads = []
    for i in range(8):
        raw = random.Random(i).randbytes(200_000) + bytes(300_000)
        payloads.append((raw, compress(ZSTD, raw)))
    bad = []

    def work(k):
        raw, packed = payloads[k]
        for _ in range(60):
            try:
                if decompress(ZSTD, packed) != raw:
                    bad.append("mismatch")
            except Exception as e:
                bad.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("bad", len(bad), bad[:3])
    """
)


def test_concurrent_zstd_decompression_is_whole() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "bad 0 []"), done.stderr[-2000:]
