"""The cluster store's tables, created on first use and migrated forward.

Each entry of ``MIGRATIONS`` takes the schema from version ``i`` to ``i + 1``;
a database records the version it is at in ``kgroups_schema``. Brokers of
different releases may start together, so a migration runs in one transaction
that first locks the version row: the first broker migrates, the others wait
and then find nothing left to do. A database newer than this release is
refused rather than written with an older idea of the tables: an upgrade of
the store is one-way.

A migration's ALTER TABLE waits for every open transaction on the table, and
every statement on it then waits behind the ALTER; so a migration waits for
its locks ``MIGRATION_LOCK_TIMEOUT_MS`` at most, and is tried again later,
rather than stall every broker behind one long transaction.

Plain SQL only (no PostgreSQL-only types or features), so that the same schema
runs on the PostgreSQL-protocol distributed databases.
"""

from __future__ import annotations

from psycopg import errors

from kgroups.postgres_store.errors import StoreUnavailable
from kgroups.postgres_store.store import Cur, Store

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        # A broker's liveness lease. lease_epoch grows by one at each registration,
        # so an older holder of the same broker.id is told apart and fenced.
        """CREATE TABLE kgroups_brokers (
            broker_id INTEGER PRIMARY KEY,
            lease_epoch BIGINT NOT NULL,
            incarnation UUID NOT NULL,
            listener TEXT NOT NULL,
            rack TEXT,
            lease_expires_at TIMESTAMPTZ NOT NULL,
            registered_at TIMESTAMPTZ NOT NULL
        )""",
        # configs: a JSON object of the topic's own config overrides.
        """CREATE TABLE kgroups_topics (
            topic_id UUID PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            partitions INTEGER NOT NULL,
            configs TEXT NOT NULL
        )""",
        # A partition is led by one incarnation of a broker (broker id and lease
        # epoch) under a leader epoch. next_offset and log_start_offset are the
        # log's end and start, kept here so an append is one conditional UPDATE.
        """CREATE TABLE kgroups_partitions (
            topic_id UUID NOT NULL REFERENCES kgroups_topics (topic_id) ON DELETE CASCADE,
            partition INTEGER NOT NULL,
            leader_id INTEGER,
            leader_lease_epoch BIGINT,
            leader_epoch INTEGER NOT NULL,
            log_start_offset BIGINT NOT NULL,
            next_offset BIGINT NOT NULL,
            PRIMARY KEY (topic_id, partition)
        )""",
        # The partition log: Kafka record batches as the leader built them, with
        # the base offset and partition leader epoch written into their headers.
        """CREATE TABLE kgroups_batches (
            topic_id UUID NOT NULL,
            partition INTEGER NOT NULL,
            base_offset BIGINT NOT NULL,
            last_offset BIGINT NOT NULL,
            max_timestamp BIGINT NOT NULL,
            batch BYTEA NOT NULL,
            PRIMARY KEY (topic_id, partition, base_offset),
            FOREIGN KEY (topic_id, partition)
                REFERENCES kgroups_partitions (topic_id, partition) ON DELETE CASCADE
        )""",
    ),
    (
        # Counters shared by the cluster: blocks of producer ids.
        """CREATE TABLE kgroups_counters (
            name TEXT PRIMARY KEY,
            next_value BIGINT NOT NULL
        )""",
        "INSERT INTO kgroups_counters (name, next_value) VALUES ('producer_id', 0)",
    ),
    (
        # Compaction: everything below clean_offset was compacted once already.
        "ALTER TABLE kgroups_partitions ADD COLUMN clean_offset BIGINT NOT NULL DEFAULT 0",
        # Idempotent producers' state per partition, written in the append's
        # transaction, so a new leader knows each producer's last batches.
        # batches: the producer's last (up to five) batches, packed.
        # Keyed like kgroups_batches, yet written out: a migration stays the SQL it ran as.
        """CREATE TABLE kgroups_producers (
            topic_id UUID NOT NULL,
            partition INTEGER NOT NULL,
            producer_id BIGINT NOT NULL,
            producer_epoch SMALLINT NOT NULL,
            last_timestamp BIGINT NOT NULL,
            batches BYTEA NOT NULL,
            PRIMARY KEY (topic_id, partition, producer_id),
            FOREIGN KEY (topic_id, partition)
                REFERENCES kgroups_partitions (topic_id, partition) ON DELETE CASCADE
        )""",
    ),
    (
        # ACL bindings and SCRAM credentials, shared by every broker as Kafka
        # keeps them in its metadata log. The 'security' counter grows at each
        # change, so a broker reads the tables again only when it moved.
        """CREATE TABLE kgroups_acls (
            resource_type SMALLINT NOT NULL,
            resource_name TEXT NOT NULL,
            pattern_type SMALLINT NOT NULL,
            principal TEXT NOT NULL,
            host TEXT NOT NULL,
            operation SMALLINT NOT NULL,
            permission SMALLINT NOT NULL,
            PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host,
                operation, permission)
        )""",
        """CREATE TABLE kgroups_scram_credentials (
            user_name TEXT NOT NULL,
            mechanism TEXT NOT NULL,
            salt BYTEA NOT NULL,
            stored_key BYTEA NOT NULL,
            server_key BYTEA NOT NULL,
            iterations INTEGER NOT NULL,
            PRIMARY KEY (user_name, mechanism)
        )""",
        "INSERT INTO kgroups_counters (name, next_value) VALUES ('security', 0)",
    ),
    (
        # Every advertised listener of a broker, as a JSON object of name to
        # host:port (Kafka registers all endpoints); NULL for a broker registered
        # before, which is reached at its one address on every listener.
        # Written as {"incarnation": ..., "endpoints": {...}}: see broker_leases.
        "ALTER TABLE kgroups_brokers ADD COLUMN listeners TEXT",
    ),
    (
        # Transactions: each producer's open transaction (its first offset, -1
        # when none) and the coordinator epoch of its last marker, so a new
        # leader knows the last stable offset and refuses a stale coordinator.
        "ALTER TABLE kgroups_producers ADD COLUMN coordinator_epoch INTEGER NOT NULL DEFAULT -1",
        "ALTER TABLE kgroups_producers ADD COLUMN txn_first_offset BIGINT NOT NULL DEFAULT -1",
        # The aborted transaction index (Kafka's .txnindex entries): one row per
        # abort marker, written in the marker's append transaction.
        """CREATE TABLE kgroups_aborted_txns (
            topic_id UUID NOT NULL,
            partition INTEGER NOT NULL,
            producer_id BIGINT NOT NULL,
            first_offset BIGINT NOT NULL,
            last_offset BIGINT NOT NULL,
            last_stable_offset BIGINT NOT NULL,
            PRIMARY KEY (topic_id, partition, last_offset),
            FOREIGN KEY (topic_id, partition)
                REFERENCES kgroups_partitions (topic_id, partition) ON DELETE CASCADE
        )""",
    ),
    (
        # Dynamic configs of groups and brokers (IncrementalAlterConfigs), by
        # Kafka's ConfigResource.Type and name ('' for the cluster-wide broker
        # default), each a JSON object of overrides.
        """CREATE TABLE kgroups_configs (
            resource_type SMALLINT NOT NULL,
            resource_name TEXT NOT NULL,
            configs TEXT NOT NULL,
            PRIMARY KEY (resource_type, resource_name)
        )""",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
_FIRST_USE_ATTEMPTS = 5
MIGRATION_LOCK_TIMEOUT_MS = 2000
_MIGRATION_ATTEMPTS = 10


class SchemaTooNew(RuntimeError):
    pass


def ensure_schema(store: Store) -> int:
    """Bring the database to ``SCHEMA_VERSION``; returns the version found before."""

    def migrate(cur: Cur) -> int:
        # One row, keyed: of two first brokers, the second one's insert waits for
        # the first one's commit, fails on the key and is retried, then finds it.
        cur.execute(
            "CREATE TABLE IF NOT EXISTS kgroups_schema"
            " (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)"
        )
        cur.execute("SELECT version FROM kgroups_schema WHERE id = 1 FOR UPDATE")
        row = cur.fetchone()
        if row is None:
            cur.execute("INSERT INTO kgroups_schema (id, version) VALUES (1, 0)")
        found = 0 if row is None else int(row[0])
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(f"store schema {found} is newer than this broker's {SCHEMA_VERSION}")
        if found < SCHEMA_VERSION:
            cur.execute(f"SET LOCAL lock_timeout = {MIGRATION_LOCK_TIMEOUT_MS}")
        for statements in MIGRATIONS[found:]:
            for statement in statements:
                cur.execute(statement.encode())
        if found < SCHEMA_VERSION:
            cur.execute("UPDATE kgroups_schema SET version = %s WHERE id = 1", (SCHEMA_VERSION,))
        return found

    first_use_failures = lock_waits = 0
    while True:
        try:
            return store.transaction(migrate)
        except (errors.UniqueViolation, errors.DuplicateTable):
            first_use_failures += 1
            if first_use_failures == _FIRST_USE_ATTEMPTS:
                raise
        except StoreUnavailable as e:
            lock_waits += 1
            if not isinstance(e.__cause__, errors.LockNotAvailable):
                raise
            if lock_waits == _MIGRATION_ATTEMPTS:
                raise StoreUnavailable(
                    f"the store schema could not be migrated: a transaction held "
                    f"its tables for {_MIGRATION_ATTEMPTS} tries of "
                    f"{MIGRATION_LOCK_TIMEOUT_MS} ms"
                ) from e
