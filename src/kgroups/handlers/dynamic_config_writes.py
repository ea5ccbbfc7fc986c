"""Where a group's or a broker's changed configs are written: the broker's
file alone, the cluster store in a cluster (then every broker takes them at
its next read). Either way the change is durable before it is answered, and
in effect on this broker at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroups.config.dynamic_configs import Plan

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["write_dynamic_configs"]


async def write_dynamic_configs(broker: BrokerApi, rtype: int, name: str, plan: Plan) -> None:
    if broker.cluster is not None:
        await broker.cluster.alter_configs(rtype, name, plan)
    else:
        await broker.dynamic_configs.alter(rtype, name, plan)
