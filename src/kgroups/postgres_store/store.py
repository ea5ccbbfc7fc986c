"""A connection to the cluster store, and its one clock.

Every lease and leadership decision compares times taken from the database's
clock (``clock_timestamp()``), never a broker's: brokers' clocks may disagree,
the store's is one. A broker only uses its own monotonic clock to be *more*
careful than the store (see ``lease_state``).

``time_shift_ms`` moves the store's clock forward for everything this handle
does; tests use it to run leases on virtual time against a real database.

A transaction that the database aborts with "serialization failure" or
"deadlock detected" (serializable databases; row locks taken in opposite
orders) is run again from the start. A lost connection, or a database that
cannot answer, raises ``StoreUnavailable`` and is *not* retried: the outcome of
a commit in flight is unknown, so the caller answers with an error (never an
acknowledgement); the next transaction connects again. Other errors propagate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from kgroups.postgres_store.errors import StoreUnavailable

T = TypeVar("T")
Conn = psycopg.Connection[Any]
Cur = psycopg.Cursor[Any]

MAX_ATTEMPTS = 10
_RETRYABLE = (errors.SerializationFailure, errors.DeadlockDetected)

# The store's "now", as SQL; it reads the parameter %(shift_ms)s.
NOW = "(clock_timestamp() + %(shift_ms)s * INTERVAL '1 millisecond')"


CONNECT_TIMEOUT_S = 5


def ending_stalled_transactions(url: str, timeout_ms: int) -> str:
    """``url`` with the server ending this session's transactions that stay idle
    for ``timeout_ms``: a broker paused or stalled in the middle of a
    transaction must not hold its row locks, and with them every other
    broker's elections and appends, until it wakes up."""
    params = conninfo_to_dict(url)
    setting = f"-c idle_in_transaction_session_timeout={timeout_ms}"
    options = str(params.get("options") or "")
    params["options"] = f"{options} {setting}".strip()
    return make_conninfo("", **params)


@dataclass(slots=True)
class Store:
    conn: Conn
    url: str | None = None  # to connect again after the connection was lost
    time_shift_ms: int = 0

    @classmethod
    def connect(cls, url: str) -> Store:
        try:
            return cls(psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S), url)
        except psycopg.OperationalError as e:
            raise StoreUnavailable(str(e)) from e

    def close(self) -> None:
        self.conn.close()

    def params(self, **values: object) -> dict[str, object]:
        return {"shift_ms": self.time_shift_ms, **values}

    def transaction(self, work: Callable[[Cur], T]) -> T:
        """Run ``work`` in a transaction of its own and commit; retry it if aborted."""
        return self._run(work, autocommit=False)

    def statement(self, work: Callable[[Cur], T]) -> T:
        """Run ``work``, each of whose statements is a transaction of its own
        (autocommit): a statement's result is only read once PostgreSQL has
        committed it. For a write that is one statement, it saves the round
        trips of BEGIN and COMMIT. Retried as ``transaction`` is."""
        return self._run(work, autocommit=True)

    def _run(self, work: Callable[[Cur], T], *, autocommit: bool) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                if self.conn.closed and self.url is not None:
                    self.conn = psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S)
                if self.conn.autocommit != autocommit:
                    self.conn.autocommit = autocommit
                if autocommit:
                    with self.conn.cursor() as cur:
                        return work(cur)
                with self.conn.transaction(), self.conn.cursor() as cur:
                    return work(cur)
            except _RETRYABLE:
                if attempt == MAX_ATTEMPTS:
                    raise
            except (
                psycopg.OperationalError,
                psycopg.InterfaceError,
                errors.IdleInTransactionSessionTimeout,  # ended by the server: see above
            ) as e:
                if self.conn.broken:
                    self.conn.close()
                raise StoreUnavailable(str(e)) from e
        raise AssertionError("unreachable")
