"""`EmbeddedBroker.faults`: make the broker misbehave the way Kafka does, and
watch what the clients under test do. See docs/testing.md, "Fault injection".

A thread broker runs each action on its loop; a process broker gets it over
its fault admin endpoint (``fault.admin.port``), as a test in another
language would. Faults last until cleared or the broker restarts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class FaultRefused(ValueError):
    """The broker refused the action: an unknown group, member, API or error,
    or a request the endpoint does not take (its message says why)."""


class BrokerFaults:
    def __init__(self, run: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        self._run = run

    # -- the group coordinator ----------------------------------------------

    def coordinator_error(self, group: str | None = None, error: str = "NOT_COORDINATOR") -> None:
        """The group's (None: every group's) requests answer ``error``:
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE (FindCoordinator too) or
        COORDINATOR_LOAD_IN_PROGRESS."""
        self._do("coordinator-error", group=group, error=error)

    def move_coordinator(self, group: str) -> None:
        """The group's coordinator fails over: requests in flight are told
        NOT_COORDINATOR and its groups are loaded again from the log."""
        self._do("move-coordinator", group=group)

    def force_rebalance(self, group: str) -> None:
        """The group rebalances now, as when a member's subscription changes
        (a KIP-848 group's epoch moves on)."""
        self._do("force-rebalance", group=group)

    def expire_member(self, group: str, member: str) -> None:
        """The member's session times out now: it is removed, the group
        rebalances, and its next request gets UNKNOWN_MEMBER_ID (a KIP-848
        member: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID)."""
        self._do("expire-member", group=group, member=member)

    # -- requests and storage -----------------------------------------------

    def delay(self, api: str, ms: float) -> None:
        """Answers to ``api`` (a Kafka API name: "Fetch", "Produce", ...)
        leave ``ms`` later; 0 removes the delay."""
        self._do("delay", api=api, ms=ms)

    def drop(self, api: str, count: int | None = None) -> None:
        """Handle the next ``count`` (None: every) ``api`` request without
        answering it: the client times out and retries."""
        self._do("drop", api=api, count=count)

    def fail_appends(self, topic: str | None = None, error: str = "KAFKA_STORAGE_ERROR") -> None:
        """Appends to ``topic`` (None: every topic, offset commits included)
        fail with ``error``, as on a full disk."""
        self._do("fail-appends", topic=topic, error=error)

    def pause_partition(self, topic: str, partition: int) -> None:
        """Fetches of the partition return no records until resumed."""
        self._do("pause-partition", topic=topic, partition=partition)

    def resume_partition(self, topic: str, partition: int) -> None:
        self._do("resume-partition", topic=topic, partition=partition)

    def clear(self) -> None:
        """Remove every fault."""
        self._do("clear")

    def describe(self) -> dict[str, Any]:
        """The faults set now."""
        return self._run("", {})

    def _do(self, action: str, **args: Any) -> None:
        self._run(action, args)


def http_runner(url: str, timeout: float = 30) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """Actions sent to a fault admin endpoint (``http://127.0.0.1:PORT``)."""

    def run(action: str, args: dict[str, Any]) -> dict[str, Any]:
        # Imported with a process broker's first fault (http.client and email are no
        # small import, and a thread broker never needs them).
        import urllib.error
        import urllib.request

        if action:
            request = urllib.request.Request(
                f"{url}/faults/{action}",
                data=json.dumps(args).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
        else:
            request = urllib.request.Request(f"{url}/faults")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as e:
            # Every refusal carries {"error": ...} naming the problem.
            try:
                error = json.loads(e.read())["error"]
            except (ValueError, KeyError, TypeError):
                raise e from None
            raise FaultRefused(error) from None
        return answer.get("faults", answer) if action else answer

    return run
