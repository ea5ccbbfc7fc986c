"""Broker liveness leases in the cluster store (KRaft's broker registration and heartbeats).

A broker registers with its broker.id and gets a lease epoch, one more than the
last one given to that id; it renews every ``broker.heartbeat.interval.ms`` and
the lease runs out ``broker.session.timeout.ms`` after the last renewal, on the
store's clock. A lease that ran out stays dead: renewing it fails, and the
broker registers again (new lease epoch, no partitions).

A broker registers the address of every listener it advertises (Kafka's
endpoints), so each client is told the brokers' addresses on the listener it
came through; ``listener`` is the inter-broker listener's address. The
listeners are stored with the incarnation that registered them: a broker of an
older release registering the same id again leaves them behind unchanged, and
they are not taken for its own. Such a broker, like one whose row has no
listeners, is known at its one address, on the inter-broker listener only.

Only one live lease per broker.id: as Kafka refuses a second registration of an
id whose session is still live, ``register`` raises ``DuplicateBroker`` until
the other holder's lease has run out. The same process retrying a registration
whose answer it lost is recognised by its incarnation id and let through.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.postgres_store.errors import DuplicateBroker, LeaseExpired
from kgroups.postgres_store.store import NOW, Cur, Store


@dataclass(frozen=True, slots=True)
class LiveBroker:
    broker_id: int
    lease_epoch: int
    listener: str
    """host:port of the inter-broker listener."""
    rack: str | None
    listeners: Mapping[str, str] | None = None
    """Listener name -> advertised host:port; None for a broker registered by
    a release that stored one address only."""

    def address_on(self, listener: str, inter_broker_listener: str) -> str | None:
        """host:port for a client of ``listener``; None when the broker lacks it.
        A broker that registered one address only is reached there by the
        clients of the inter-broker listener alone: its other ports are unknown,
        and may speak another security protocol."""
        if self.listeners is not None:
            return self.listeners.get(listener)
        return self.listener if listener == inter_broker_listener else None


def register(
    store: Store,
    broker_id: int,
    listener: str,
    session_timeout_ms: int,
    *,
    incarnation: uuid.UUID,
    rack: str | None = None,
    listeners: Mapping[str, str] | None = None,
) -> int:
    """Take the lease of ``broker_id``; returns the new lease epoch.
    ``listeners``: every advertised listener's host:port, by name."""

    def work(cur: Cur) -> int:
        cur.execute(
            f"""INSERT INTO kgroups_brokers AS b
                    (broker_id, lease_epoch, incarnation, listener, listeners, rack,
                     lease_expires_at, registered_at)
                VALUES (%(id)s, 1, %(inc)s, %(listener)s, %(listeners)s, %(rack)s,
                        {NOW} + %(timeout)s * INTERVAL '1 millisecond', {NOW})
                ON CONFLICT (broker_id) DO UPDATE SET
                    lease_epoch = b.lease_epoch + 1,
                    incarnation = excluded.incarnation,
                    listener = excluded.listener,
                    listeners = excluded.listeners,
                    rack = excluded.rack,
                    lease_expires_at = excluded.lease_expires_at,
                    registered_at = excluded.registered_at
                WHERE b.lease_expires_at <= {NOW} OR b.incarnation = excluded.incarnation
                RETURNING b.lease_epoch""",
            store.params(
                id=broker_id,
                inc=incarnation,
                listener=listener,
                listeners=json.dumps(
                    {"incarnation": str(incarnation), "endpoints": dict(listeners or {})},
                    sort_keys=True,
                ),
                rack=rack,
                timeout=session_timeout_ms,
            ),
        )
        row = cur.fetchone()
        if row is None:
            raise DuplicateBroker(broker_id)
        return int(row[0])

    return store.transaction(work)


def renew(store: Store, broker_id: int, lease_epoch: int, session_timeout_ms: int) -> None:
    """Extend a live lease; ``LeaseExpired`` if it ran out or was taken anew."""

    def work(cur: Cur) -> None:
        cur.execute(
            f"""UPDATE kgroups_brokers
                SET lease_expires_at = {NOW} + %(timeout)s * INTERVAL '1 millisecond'
                WHERE broker_id = %(id)s AND lease_epoch = %(epoch)s
                    AND lease_expires_at > {NOW}""",
            store.params(id=broker_id, epoch=lease_epoch, timeout=session_timeout_ms),
        )
        if cur.rowcount != 1:
            raise LeaseExpired(broker_id, lease_epoch)

    store.transaction(work)


def end_lease(cur: Cur, store: Store, broker_id: int, lease_epoch: int) -> bool:
    """End the lease now (controlled shutdown), in the caller's transaction."""
    cur.execute(
        f"""UPDATE kgroups_brokers SET lease_expires_at = {NOW}
            WHERE broker_id = %(id)s AND lease_epoch = %(epoch)s AND lease_expires_at > {NOW}""",
        store.params(id=broker_id, epoch=lease_epoch),
    )
    return cur.rowcount == 1


def live_brokers_in(cur: Cur, store: Store) -> list[LiveBroker]:
    cur.execute(
        f"""SELECT broker_id, lease_epoch, listener, rack, listeners, incarnation
            FROM kgroups_brokers WHERE lease_expires_at > {NOW} ORDER BY broker_id""",
        store.params(),
    )
    return [
        LiveBroker(int(r[0]), int(r[1]), str(r[2]), r[3], _own_listeners(r[4], r[5]))
        for r in cur.fetchall()
    ]


def _own_listeners(stored: str | None, incarnation: object) -> dict[str, str] | None:
    """The listeners registered by the row's incarnation; None when there are
    none, or they were left by another one (an older release registering again)."""
    registered = json.loads(stored) if stored else None
    if not isinstance(registered, dict) or registered.get("incarnation") != str(incarnation):
        return None
    endpoints = registered.get("endpoints")
    return dict(endpoints) if isinstance(endpoints, dict) else None


def live_brokers(store: Store) -> list[LiveBroker]:
    """Brokers with a live lease, by id (Metadata, DescribeCluster)."""
    return store.transaction(lambda cur: live_brokers_in(cur, store))
