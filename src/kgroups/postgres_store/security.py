"""ACL bindings and SCRAM credentials kept in the cluster store.

Every change bumps the ``security`` counter in its own transaction; a broker
polls the counter each heartbeat and reads both tables again only when it
moved, so a change made through one broker is enforced by all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgroups.postgres_store.store import Cur, Store
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType
from kgroups.security.scram import ScramCredential

_COLUMNS = "resource_type, resource_name, pattern_type, principal, host, operation, permission"


@dataclass(frozen=True, slots=True)
class Security:
    version: int
    acls: list[AclBinding]
    # (user, mechanism, credential)
    credentials: list[tuple[str, str, ScramCredential]]


def _row(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (
        int(b.resource_type),
        b.resource_name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission),
    )


def _bump(cur: Cur) -> None:
    cur.execute("UPDATE kgroups_counters SET next_value = next_value + 1 WHERE name = 'security'")


def _read_acls(cur: Cur) -> list[AclBinding]:
    cur.execute(f"SELECT {_COLUMNS} FROM kgroups_acls")
    return [
        AclBinding(
            ResourceType(r[0]),
            r[1],
            PatternType(r[2]),
            r[3],
            r[4],
            Operation(r[5]),
            Permission(r[6]),
        )
        for r in cur.fetchall()
    ]


def add_acls(store: Store, bindings: list[AclBinding]) -> None:
    def work(cur: Cur) -> None:
        for b in bindings:
            cur.execute(
                f"INSERT INTO kgroups_acls ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                _row(b),
            )
        _bump(cur)

    store.transaction(work)


def delete_acls(store: Store, selects: Callable[[AclBinding], bool]) -> list[AclBinding]:
    """Delete and return the bindings ``selects`` picks, as the store holds them."""

    def work(cur: Cur) -> list[AclBinding]:
        # Serialised with other deletions: the selection is of the committed set.
        cur.execute("SELECT next_value FROM kgroups_counters WHERE name = 'security' FOR UPDATE")
        removed = [b for b in _read_acls(cur) if selects(b)]
        for b in removed:
            cur.execute(
                "DELETE FROM kgroups_acls WHERE resource_type = %s AND resource_name = %s"
                " AND pattern_type = %s AND principal = %s AND host = %s AND operation = %s"
                " AND permission = %s",
                _row(b),
            )
        if removed:
            _bump(cur)
        return removed

    return store.transaction(work)


def alter_credentials(
    store: Store,
    upserts: list[tuple[str, str, ScramCredential]],
    deletions: list[tuple[str, str]],
) -> None:
    def work(cur: Cur) -> None:
        for user, mechanism in deletions:
            cur.execute(
                "DELETE FROM kgroups_scram_credentials WHERE user_name = %s AND mechanism = %s",
                (user, mechanism),
            )
        for user, mechanism, c in upserts:
            cur.execute(
                """INSERT INTO kgroups_scram_credentials
                   (user_name, mechanism, salt, stored_key, server_key, iterations)
                   VALUES (%s, %s, %s, %s, %s, %s)
                   ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = excluded.salt,
                   stored_key = excluded.stored_key, server_key = excluded.server_key,
                   iterations = excluded.iterations""",
                (user, mechanism, c.salt, c.stored_key, c.server_key, c.iterations),
            )
        _bump(cur)

    store.transaction(work)


def read_security(store: Store, known_version: int | None) -> Security | None:
    """Both tables, or None when the counter still says ``known_version``."""

    def work(cur: Cur) -> Security | None:
        cur.execute("SELECT next_value FROM kgroups_counters WHERE name = 'security'")
        row = cur.fetchone()
        version = 0 if row is None else int(row[0])
        if version == known_version:
            return None
        cur.execute(
            "SELECT user_name, mechanism, salt, stored_key, server_key, iterations"
            " FROM kgroups_scram_credentials"
        )
        credentials = [
            (r[0], r[1], ScramCredential(bytes(r[2]), bytes(r[3]), bytes(r[4]), int(r[5])))
            for r in cur.fetchall()
        ]
        return Security(version, _read_acls(cur), credentials)

    return store.transaction(work)
