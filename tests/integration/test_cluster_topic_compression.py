"""A topic's compression.type in a cluster: the partition's leader stores
produced batches in the topic's codec, small ones on the loop and big ones
rebuilt on a worker thread, as a broker alone does."""

from __future__ import annotations

import random
from pathlib import Path

from cluster_brokers import create_topic, fetch_batches, leaders, produce_batch, running_cluster

from kgroups.errors import ErrorCode
from kgroups.records.batch import decode_records, encode_batch, iter_batches
from kgroups.records.compression import GZIP, ZSTD


def test_the_leader_stores_batches_in_the_topics_codec(tmp_path: Path, store_url: str) -> None:
    rng = random.Random(3)
    small = [(b"k", b"small value", [("h", b"1")], 1_000)]
    big = [(None, rng.randbytes(100_000), [], 2_000)]
    with running_cluster(tmp_path, store_url, 1) as brokers:
        port = brokers[0].port
        assert create_topic(port, "z", 1, compression_type="zstd") == ErrorCode.none
        leaders(port, "z")
        for records in (small, big):
            batch = encode_batch(records, compression=GZIP, producer_id=-1)
            assert produce_batch(port, "z", 0, batch)[0] == ErrorCode.none
        error, raw = fetch_batches(port, "z", 0, 0)
        assert error == ErrorCode.none
        batches = [(h, raw[p : p + h.size]) for p, h in iter_batches(raw)]
        assert [h.compression for h, _b in batches] == [ZSTD, ZSTD]
        stored = [r for _h, b in batches for r in decode_records(b)]
        assert [(r.key, r.value, list(r.headers), r.timestamp) for r in stored] == [
            (k, v, list(h), ts) for k, v, h, ts in small + big
        ]
