"""What a partition gained by this broker starts from: its log's start and end
and its idempotent producers' state, read once no transaction is writing it.

A write to a partition log locks its row until it commits or aborts. A write
this broker gave up on (its connection lost with the COMMIT on its way, so
the outcome is unknown) may still be open on the server, and commit after a
plain read of the row: a log started from that read would take new writes on
a stale end and stale producer state (its next batch "out of order" for good,
its high watermark behind the store's). So the read takes a share lock on
each row and skips the rows another transaction holds: such a partition is
not gained this turn, and a later turn reads it once that transaction is over,
whatever its outcome. Its producers' rows are read in the same transaction,
after the lock: they are the ones of that log end.

Partitions this broker already serves (``held``) are not read, nor locked:
its own writer appends to them.
"""

from __future__ import annotations

from collections.abc import Set

from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.postgres_store.producer_states import read_producers
from kgroups.postgres_store.store import Cur, Store

TopicPartition = tuple[str, int]


def read_gained(
    store: Store, broker_id: int, lease_epoch: int, held: Set[TopicPartition]
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, ProducerStateManager]]:
    """(log start, log end) and producers of each partition this incarnation
    leads and does not hold, of those no other transaction is writing now."""

    def work(
        cur: Cur,
    ) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, ProducerStateManager]]:
        cur.execute(
            """SELECT t.name, p.partition, p.log_start_offset, p.next_offset
               FROM kgroups_partitions p JOIN kgroups_topics t ON t.topic_id = p.topic_id
               WHERE p.leader_id = %s AND p.leader_lease_epoch = %s
                   AND (t.name, p.partition) NOT IN
                       (SELECT * FROM unnest(%s::text[], %s::int[]))
               FOR SHARE OF p SKIP LOCKED""",
            (broker_id, lease_epoch, [tp[0] for tp in held], [tp[1] for tp in held]),
        )
        ends = {(r[0], int(r[1])): (int(r[2]), int(r[3])) for r in cur.fetchall()}
        return ends, read_producers(cur, ends)

    return store.transaction(work)
