"""The condition every write to a partition log carries, and why it failed.

A write (append, moving the log start) updates the partition's row only where
the writer leads the partition at the leader epoch it believes in, under the
lease epoch it registered with, and that lease is live on the store's clock:
the statement joins ``kgroups_partitions p`` with ``kgroups_brokers b`` and
adds ``FENCE``, which reads %(broker)s and %(lease)s; the leader epoch is the
caller's column. When no row was updated, ``refusal`` says which part failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroups.errors import KafkaError
from kgroups.postgres_store.errors import LeaseExpired, NotLeader, UnknownPartition
from kgroups.postgres_store.store import NOW, Cur, Store

FENCE = f"""p.leader_id = %(broker)s AND p.leader_lease_epoch = %(lease)s
    AND b.broker_id = %(broker)s AND b.lease_epoch = %(lease)s
    AND b.lease_expires_at > {NOW}"""


@dataclass(frozen=True, slots=True)
class Writer:
    """The broker incarnation that writes: its id and registered lease epoch."""

    broker_id: int
    lease_epoch: int

    def params(self, store: Store, **values: object) -> dict[str, object]:
        return store.params(broker=self.broker_id, lease=self.lease_epoch, **values)


def refusal(cur: Cur, store: Store, writer: Writer, topic: str, partition: int) -> KafkaError:
    cur.execute(
        f"""SELECT lease_expires_at > {NOW} FROM kgroups_brokers
            WHERE broker_id = %(broker)s AND lease_epoch = %(lease)s""",
        writer.params(store),
    )
    row = cur.fetchone()
    if row is None or not row[0]:
        return LeaseExpired(writer.broker_id, writer.lease_epoch)
    cur.execute(
        """SELECT p.leader_id, p.leader_epoch FROM kgroups_partitions p
           JOIN kgroups_topics t ON t.topic_id = p.topic_id
           WHERE t.name = %s AND p.partition = %s""",
        (topic, partition),
    )
    found = cur.fetchone()
    if found is None:
        return UnknownPartition(topic, partition)
    return NotLeader(topic, partition, found[0], int(found[1]))


def still_leads(
    cur: Cur, store: Store, writer: Writer, topic: str, partition: int, epoch: int
) -> bool:
    """Whether the writer leads the partition at ``epoch`` under a live lease, now."""
    cur.execute(
        f"""SELECT 1 FROM kgroups_partitions p
            JOIN kgroups_topics t ON t.topic_id = p.topic_id
            JOIN kgroups_brokers b ON b.broker_id = p.leader_id
            WHERE t.name = %(topic)s AND p.partition = %(partition)s
                AND p.leader_epoch = %(epoch)s AND {FENCE}""",
        writer.params(store, topic=topic, partition=partition, epoch=epoch),
    )
    return cur.fetchone() is not None
