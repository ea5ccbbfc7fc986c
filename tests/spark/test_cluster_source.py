"""The kgroups data source reading a topic whose partitions are led by three
brokers of a cluster, from a bootstrap naming one of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import leaders, running_cluster, wait_for
from spark_helpers import create_topic, produce

pytestmark = pytest.mark.spark


def test_a_batch_read_through_one_broker_reads_the_partitions_of_all_three(
    spark: Any, tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 3) as brokers:
        bootstrap = brokers[0].bootstrap
        create_topic(bootstrap, "spread", 3)
        wait_for(lambda: set(leaders(brokers[0].port, "spread").values()) == {1, 2, 3})
        records = [(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(300)]
        produce(bootstrap, "spread", records)
        rows = (
            spark.read.format("kgroups")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "spread")
            .load()
            .collect()
        )
        got = {(r.partition, r.offset): (r.key, r.value) for r in rows}
        assert got == {(p, i // 3): (k, v) for i, (k, v, p) in enumerate(records)}
