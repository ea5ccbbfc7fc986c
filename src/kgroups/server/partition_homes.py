"""The one place that decides where a broker's partitions live.

Without ``cluster.store.url`` a broker is alone and keeps its partitions in
segment files under ``log.dirs`` (kgroups.storage). With it, the broker joins
a cluster kept in PostgreSQL and serves the partitions it leads from the store
(kgroups.postgres_store, with kgroups.cluster for its lease and leadership):
those packages, and psycopg with them, are imported only then, so a plain
``pip install kgroups`` serves a single broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroups.extras import require
from kgroups.partitions.home import PartitionHome
from kgroups.storage.home import LocalHome

if TYPE_CHECKING:
    from kgroups.cluster.member import ClusterHost, ClusterMember
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["open_partition_home"]


def open_partition_home(broker: BrokerApi) -> tuple[PartitionHome, ClusterMember | None]:
    """The broker's partition home, and its cluster membership when in a cluster."""
    url = broker.config.get_str("cluster.store.url")
    if not url:
        return LocalHome(broker), None
    require("psycopg", "cluster mode (cluster.store.url)")
    from kgroups.cluster.member import ClusterMember

    host: ClusterHost = broker
    member = ClusterMember(host, url)
    return member.home, member
