"""Faults a test sets on a running broker, so that it can see what its real
clients do when Kafka misbehaves: coordinator errors, slow or lost answers,
failing appends, a partition whose fetches return nothing.

The request path asks ``active`` first and nothing more while no fault is
set. Everything here runs on the broker's loop. Coordinator actions (a forced
rebalance, an expired member, a moved coordinator) are not kept here: they
happen once, through the coordinator runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kgroups.errors import ErrorCode
from kgroups.protocol import apis

COORDINATOR_ERRORS = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.coordinator_load_in_progress,
    }
)
_API_KEYS = {r.name.lower(): r.key for r in apis.SUPPORTED.values()}


def error_code(name: str | ErrorCode) -> ErrorCode:
    """``NOT_COORDINATOR``, ``not_coordinator`` or an ErrorCode."""
    if isinstance(name, ErrorCode):
        return name
    try:
        return ErrorCode[name.lower()]
    except KeyError:
        raise ValueError(f"unknown Kafka error {name!r}") from None


def api_key(name: str | int) -> int:
    """``Fetch``, ``fetch`` or the API key."""
    if isinstance(name, int) and name in apis.SUPPORTED:
        return name
    key = _API_KEYS.get(str(name).lower())
    if key is None:
        known = ", ".join(r.name for r in apis.SUPPORTED.values())
        raise ValueError(f"unknown API {name!r}; one of {known}")
    return key


class Faults:
    def __init__(self) -> None:
        self.active = False
        """False while no fault is set: all the request path looks at."""
        # Group id (None: every group) -> the error its group APIs answer.
        self._coordinator: dict[str | None, ErrorCode] = {}
        # API key -> seconds its answers wait.
        self._delays: dict[int, float] = {}
        # API key -> answers still to drop (None: all of them).
        self._drops: dict[int, int | None] = {}
        # Topic (None: every topic, __consumer_offsets included) -> append error.
        self._appends: dict[str | None, ErrorCode] = {}
        self._paused: set[tuple[str, int]] = set()
        # Set by clear(): delayed answers leave at once.
        self._cleared = asyncio.Event()

    def _changed(self) -> None:
        self.active = bool(
            self._coordinator or self._delays or self._drops or self._appends or self._paused
        )

    # -- setting -------------------------------------------------------------

    def coordinator_error(
        self, group: str | None = None, error: str | ErrorCode = "NOT_COORDINATOR"
    ) -> None:
        """The group's (None: every group's) requests answer ``error``, one of
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS."""
        code = error_code(error)
        if code not in COORDINATOR_ERRORS:
            raise ValueError(f"{code.name} is not a coordinator error")
        self._coordinator[group] = code
        self._changed()

    def delay(self, api: str | int, ms: float) -> None:
        """Answers to ``api`` requests leave ``ms`` later (0 removes the delay)."""
        if ms < 0:
            raise ValueError("a delay is at least 0 ms")
        key = api_key(api)
        if ms:
            self._delays[key] = ms / 1000
        else:
            self._delays.pop(key, None)
        self._changed()

    def drop(self, api: str | int, count: int | None = None) -> None:
        """Handle the next ``count`` (None: every) ``api`` request but send no
        answer: the client times the request out and retries."""
        if count is not None and count < 1:
            raise ValueError("count is at least 1")
        self._drops[api_key(api)] = count
        self._changed()

    def fail_appends(
        self, topic: str | None = None, error: str | ErrorCode = "KAFKA_STORAGE_ERROR"
    ) -> None:
        """Appends to ``topic`` (None: every topic, the coordinator's
        `__consumer_offsets` included) fail with ``error``, as on a full disk."""
        self._appends[topic] = error_code(error)
        self._changed()

    def pause_partition(self, topic: str, partition: int) -> None:
        """Fetches of the partition return no records (appends still work)."""
        self._paused.add((topic, partition))
        self._changed()

    def resume_partition(self, topic: str, partition: int) -> None:
        self._paused.discard((topic, partition))
        self._changed()

    def clear(self) -> None:
        """Remove every fault: the broker behaves normally again, and answers
        being delayed leave now."""
        self._cleared.set()
        self._cleared = asyncio.Event()
        self._coordinator.clear()
        self._delays.clear()
        self._drops.clear()
        self._appends.clear()
        self._paused.clear()
        self._changed()

    def describe(self) -> dict[str, Any]:
        """The faults set, as JSON-ready values."""
        name = {key: r.name for key, r in apis.SUPPORTED.items()}
        return {
            "coordinator_errors": {
                group or "*": code.name.upper() for group, code in self._coordinator.items()
            },
            "delays_ms": {name[k]: s * 1000 for k, s in self._delays.items()},
            "drops": {name[k]: count for k, count in self._drops.items()},
            "append_errors": {
                topic or "*": code.name.upper() for topic, code in self._appends.items()
            },
            "paused": sorted([t, p] for t, p in self._paused),
        }

    # -- consulted by the request path (only while ``active``) ----------------

    def coordinator_error_for(self, group: str) -> ErrorCode | None:
        faults = self._coordinator
        return faults.get(group) or faults.get(None)

    def append_error_for(self, topic: str) -> ErrorCode | None:
        appends = self._appends
        return appends.get(topic) or appends.get(None)

    def is_paused(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._paused

    async def answer(self, api: int, response: bytes | None) -> bytes | None:
        """The answer to send after the delay set for ``api``; None if dropped."""
        delay = self._delays.get(api)
        if delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cleared.wait(), delay)
        if response is None or api not in self._drops:
            return response
        left = self._drops[api]
        if left is not None:
            if left > 1:
                self._drops[api] = left - 1
            else:
                del self._drops[api]
                self._changed()
        return None
