"""What request handlers see of the broker: its core and its group coordinator.

Handlers, dispatch and the connection loop depend on this protocol, not on
server/broker.py, which imports them; Broker satisfies it.
"""

from __future__ import annotations

from typing import Protocol

from kgroups.server.acl_store import DurableAuthorizer
from kgroups.server.broker_core import BrokerCore
from kgroups.server.coordinator_runtime import CoordinatorRuntime
from kgroups.server.transaction_runtime import TransactionRuntime
from kgroups.server.txn_verification import TransactionVerifier


class BrokerApi(BrokerCore, Protocol):
    coordinator: CoordinatorRuntime
    txn_coordinator: TransactionRuntime
    transactions: TransactionVerifier | None
    """Verifies transactional produce (KIP-890); None accepts every batch."""
    authorizer: DurableAuthorizer | None
    """The ACLs, when authorizer.class.name is set; None allows everything."""
