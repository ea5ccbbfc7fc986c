"""Fault injection from outside the broker: named actions with JSON
arguments, and the HTTP endpoint (``fault.admin.port``) that serves them.

``POST /faults/<action>`` with a JSON object of arguments answers
``{"ok": true, "faults": ...}`` (the faults now set), or 400 and
``{"error": ...}``; ``GET /faults`` shows the faults set. The endpoint binds
127.0.0.1 only and answers only requests whose Host is a loopback name: it is
for tests, on the machine that runs them (kgroups.metrics.http refuses other
hosts, other content types and bodies it cannot frame, each with a JSON error).
The EmbeddedBroker of kgroups.testing and ``kgroups fault`` use the same actions.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgroups.errors import KafkaError
from kgroups.metrics.http import HttpServer, Page

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

log = logging.getLogger(__name__)

_JSON = "application/json"


def _actions(broker: BrokerApi) -> dict[str, Callable[..., None]]:
    faults, coordinator = broker.faults, broker.coordinator
    return {
        "coordinator-error": faults.coordinator_error,
        "delay": faults.delay,
        "drop": faults.drop,
        "fail-appends": faults.fail_appends,
        "pause-partition": faults.pause_partition,
        "resume-partition": faults.resume_partition,
        "clear": faults.clear,
        "force-rebalance": lambda group: coordinator.force_rebalance(group),
        "expire-member": lambda group, member: coordinator.expire_member(group, member),
        "move-coordinator": lambda group: coordinator.move_coordinator(group),
    }


ACTIONS = (
    "coordinator-error",
    "delay",
    "drop",
    "fail-appends",
    "pause-partition",
    "resume-partition",
    "clear",
    "force-rebalance",
    "expire-member",
    "move-coordinator",
)


def apply_fault(broker: BrokerApi, action: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one action on the broker's loop; the faults set after it.
    ValueError for an unknown action or bad arguments; KafkaError when the
    coordinator refuses (an unknown group or member)."""
    act = _actions(broker).get(action)
    if act is None:
        raise ValueError(f"unknown fault action {action!r}; one of {', '.join(ACTIONS)}")
    _check_arguments(action, act, args)
    try:
        act(**args)
    except TypeError as e:  # an argument of the wrong JSON type
        raise ValueError(f"{action}: {e}") from None
    log.warning("fault injected: %s %s", action, args or "")
    return broker.faults.describe()


def _check_arguments(action: str, act: Callable[..., None], args: dict[str, Any]) -> None:
    """ValueError naming the missing or unknown arguments of an action."""
    params = inspect.signature(act).parameters
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    missing = [n for n in required if n not in args]
    unknown = sorted(set(args) - set(params))
    problems = []
    if missing:
        problems.append(f"missing argument(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown argument(s) {', '.join(unknown)}")
    if problems:
        accepted = ", ".join(params) or "none"
        raise ValueError(f"{action}: {'; '.join(problems)} (its arguments: {accepted})")


def refusal(error: ValueError | KafkaError) -> str:
    """Why an action was refused, for the test that asked."""
    if isinstance(error, KafkaError):
        return f"{error.error_code.name.upper()}: {error}"
    return str(error)


async def start_fault_admin(broker: BrokerApi) -> HttpServer | None:
    """Listen on ``fault.admin.port`` on 127.0.0.1; None when disabled (-1)."""
    port = broker.config.get_int("fault.admin.port")
    if port < 0:
        return None

    async def show() -> Page:
        return 200, _JSON, json.dumps(broker.faults.describe()).encode()

    def action(name: str) -> Callable[[bytes], Any]:
        async def run(body: bytes) -> Page:
            try:
                args = json.loads(body or b"{}")
                if not isinstance(args, dict):
                    raise ValueError("the body is a JSON object of arguments")
                described = apply_fault(broker, name, args)
            except (ValueError, KafkaError) as e:
                return 400, _JSON, json.dumps({"error": refusal(e)}).encode()
            return 200, _JSON, json.dumps({"ok": True, "faults": described}).encode()

        return run

    server = HttpServer(
        {"/faults": show},
        {f"/faults/{name}": action(name) for name in ACTIONS},
        loopback_only=True,
    )
    bound = await server.start("127.0.0.1", port)
    log.warning("fault injection endpoint on http://127.0.0.1:%d/faults", bound)
    return server
