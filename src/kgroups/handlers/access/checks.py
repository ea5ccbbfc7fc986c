"""What every guard is made of: the resource types, the check, the
service of the part of a request the caller may touch."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from kgroups.errors import ErrorCode
from kgroups.security.authorizer import CLUSTER_NAME, Authorizer, Operation, ResourceType

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


Handler = Callable[["BrokerApi", "RequestContext", Any], Awaitable[object]]
Guard = Callable[
    [Authorizer, "BrokerApi", "RequestContext", Any, Handler], Awaitable[object | None]
]


TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)


def allowed(
    az: Authorizer, ctx: RequestContext, op: Operation, rtype: ResourceType, name: str
) -> bool:
    return az.authorize(ctx.principal, ctx.client_host, op, rtype, name)


def cluster_guard(op: Operation, denial: Callable[[Any], object]) -> Guard:
    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, CLUSTER, CLUSTER_NAME):
            return denial(body)
        return await handler(broker, ctx, body)

    return guard


CLUSTER_DENIED = ErrorCode.cluster_authorization_failed


TXN_DENIED = ErrorCode.transactional_id_authorization_failed


async def serve_allowed(
    broker: BrokerApi,
    ctx: RequestContext,
    body: Any,
    handler: Handler,
    entries: str,
    denied: Sequence[Any],
    results: str,
    refuse: Callable[[Sequence[Any]], tuple[Any, ...]],
) -> object:
    """Serve the entries of ``body.<entries>`` the caller may touch; the
    ``denied`` ones are answered ``refuse(denied)``, added to the response's
    ``<results>``, as Kafka answers a partly authorized request."""
    if not denied:
        return await handler(broker, ctx, body)
    kept = tuple(e for e in getattr(body, entries) if e not in denied)
    response: Any = await handler(broker, ctx, dataclasses.replace(body, **{entries: kept}))
    answered = getattr(response, results) + refuse(denied)
    return dataclasses.replace(response, **{results: answered})
