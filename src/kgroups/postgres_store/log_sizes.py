"""The bytes each partition holds in the store (DescribeLogDirs), and the
name the store goes by as a broker's one log directory."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.conninfo import conninfo_to_dict

from kgroups.postgres_store.store import Cur, Store

TopicPartition = tuple[str, int]


def partition_sizes(
    store: Store, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    """Bytes of the stored batches of each partition; 0 for one with none."""
    if not partitions:
        return {}

    def work(cur: Cur) -> dict[TopicPartition, int]:
        cur.execute(
            """SELECT w.name, w.partition, COALESCE(SUM(octet_length(b.batch)), 0)
               FROM unnest(%s::text[], %s::int[]) AS w(name, partition)
               JOIN kgroups_topics t ON t.name = w.name
               LEFT JOIN kgroups_batches b
                   ON b.topic_id = t.topic_id AND b.partition = w.partition
               GROUP BY w.name, w.partition""",
            ([tp[0] for tp in partitions], [tp[1] for tp in partitions]),
        )
        return {(str(r[0]), int(r[1])): int(r[2]) for r in cur.fetchall()}

    return store.transaction(work)


def store_log_dir(url: str) -> str:
    """The store's URL without its credentials or options: where the data is,
    never how to get in."""
    params = conninfo_to_dict(url)
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = params.get("port")
    dbname = params.get("dbname")
    where = f"{host}:{port}" if port else host
    return f"postgresql://{where}/{dbname}" if dbname else f"postgresql://{where}"
