"""Spark's Python worker daemon, with kgroups' protocol modules imported before it forks.

Spark starts one daemon per kind of Python worker, and the daemon forks a worker
for each task slot. Each worker would import the Kafka client and record codecs
anew (about half a second of CPU each, more than a small job's work); imported
once here, every fork shares them. Only modules that start no thread are
imported before forking (numpy, pyarrow and pandas do start threads; they are
imported by the workers, as before). Used as ``spark.python.daemon.module``.
"""

from __future__ import annotations

import sys

__all__ = ["PRELOADED"]

PRELOADED = (
    "kgroups.assignors.protocol",
    "kgroups.client.aborted_filter",
    "kgroups.client.cluster",
    "kgroups.client.consumer_config",
    "kgroups.client.fetch_request",
    "kgroups.client.loop_thread",
    "kgroups.coordinator.consumer.records",
    "kgroups.coordinator.records",
    "kgroups.metrics.burrow",
    "kgroups.spark.cluster_calls",
    "kgroups.spark.offset_ranges",
    "kgroups.spark.options",
    "kgroups.records.batch",
)
_WITHOUT_KGROUPS = "pyspark.sql.worker.lookup_data_sources"  # lists installed sources only


def main() -> None:
    import importlib

    from pyspark.daemon import manager

    if sys.argv[1:2] != [_WITHOUT_KGROUPS]:
        for module in PRELOADED:
            importlib.import_module(module)
    manager()


if __name__ == "__main__":
    main()
