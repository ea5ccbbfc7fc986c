"""Requests on a broker's dispatch as a chosen principal from a chosen host:
what a SASL or TLS listener will set, without one."""

from __future__ import annotations

from typing import Any

from kgroups.handlers.dispatch import dispatch
from kgroups.security.authorizer import AclBinding
from kgroups.security.peer import ConnectionSecurity

from broker_thread import BrokerThread
from raw_wire import decode_response, encode_request

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def call_as(bt: BrokerThread, principal: str, request: Any, host: str = "10.0.0.1") -> Any:
    """Answer ``request`` as if ``principal`` had sent it from ``host``."""
    broker = bt.broker
    assert broker is not None
    security = ConnectionSecurity("PLAINTEXT", "PLAINTEXT", principal)
    frame = bt.run(dispatch(broker, encode_request(request)[4:], host, security))
    return None if frame is None else decode_response(type(request), frame[4:])


def add_acls(bt: BrokerThread, *bindings: AclBinding) -> None:
    def add() -> None:
        assert bt.broker is not None and bt.broker.authorizer is not None
        bt.broker.authorizer.create(list(bindings))

    bt.call(add)
