"""What request handlers see of the broker: its core and its group coordinator.

Handlers, dispatch and the connection loop depend on this protocol, not on
server/broker.py, which imports them; Broker satisfies it.
"""

from __future__ import annotations

from typing import Protocol

from kgroups.metrics.client_telemetry import ClientTelemetry
from kgroups.runtime.broker_core import BrokerCore
from kgroups.runtime.coordinator_runtime import CoordinatorRuntime
from kgroups.runtime.peer_brokers import PeerBrokers
from kgroups.runtime.share_coordinator_runtime import ShareCoordinatorRuntime
from kgroups.runtime.share_state import ShareStateLog
from kgroups.runtime.transaction_runtime import TransactionRuntime
from kgroups.runtime.txn_verification import TransactionVerifier
from kgroups.security.acl_store import DurableAuthorizer


class BrokerApi(BrokerCore, Protocol):
    coordinator: CoordinatorRuntime
    share_state: ShareStateLog
    """This broker's share partitions' side of their state: read at first
    use, written as it changes, through the share coordinator."""
    share_coordinator: ShareCoordinatorRuntime
    """The share coordinator of the ``__share_group_state`` partitions led here."""
    txn_coordinator: TransactionRuntime
    transactions: TransactionVerifier | None
    """Verifies transactional produce (KIP-890); None accepts every batch."""
    peers: PeerBrokers | None
    """In a cluster, the requests sent to other brokers (markers, verification)."""
    authorizer: DurableAuthorizer | None
    """The ACLs, when authorizer.class.name is set; None allows everything."""
    client_telemetry: ClientTelemetry
    """Client metrics subscriptions and pushes (KIP-714)."""
