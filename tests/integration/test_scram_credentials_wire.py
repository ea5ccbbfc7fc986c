"""Describe/AlterUserScramCredentials error codes, and SASL requests on a
PLAINTEXT listener."""

from __future__ import annotations

from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsRequest
from kio.schema.alter_user_scram_credentials.v0.request import (
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0 import DescribeUserScramCredentialsRequest
from kio.schema.describe_user_scram_credentials.v0.request import UserName
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from kio.static.primitive import i8, i32

from broker_thread import BrokerThread
from raw_wire import call_once


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(
        name=name,
        mechanism=i8(mechanism),
        iterations=i32(iterations),
        salt=b"salt",
        salted_password=b"x" * 32,
    )


def _alter(broker: BrokerThread, upserts=(), deletions=()) -> dict[str, ErrorCode]:  # type: ignore[no-untyped-def]
    response = call_once(
        broker.port,
        AlterUserScramCredentialsRequest(deletions=tuple(deletions), upsertions=tuple(upserts)),
    )
    return {r.user: r.error_code for r in response.results}


def test_alter_and_describe_report_kafkas_error_codes(broker: BrokerThread) -> None:
    assert _alter(
        broker,
        upserts=[_upsert("ok"), _upsert("few", iterations=100), _upsert("odd", mechanism=7)],
        deletions=[ScramCredentialDeletion(name="ghost", mechanism=i8(1))],
    ) == {
        "ghost": ErrorCode.resource_not_found,
        "ok": ErrorCode.none,
        "few": ErrorCode.unacceptable_credential,
        "odd": ErrorCode.unsupported_sasl_mechanism,
    }
    assert _alter(broker, upserts=[_upsert("twice"), _upsert("twice")]) == {
        "twice": ErrorCode.duplicate_resource
    }
    response = call_once(
        broker.port,
        DescribeUserScramCredentialsRequest(users=(UserName(name="ok"), UserName(name="few"))),
    )
    results = {r.user: r for r in response.results}
    assert results["few"].error_code == ErrorCode.resource_not_found
    assert [(c.mechanism, c.iterations) for c in results["ok"].credential_infos] == [(1, 4096)]
    everyone = call_once(broker.port, DescribeUserScramCredentialsRequest(users=None))
    assert [r.user for r in everyone.results] == ["ok"]
    assert _alter(broker, deletions=[ScramCredentialDeletion(name="ok", mechanism=i8(1))]) == {
        "ok": ErrorCode.none
    }
    everyone = call_once(broker.port, DescribeUserScramCredentialsRequest(users=None))
    assert everyone.results == ()


def test_sasl_handshake_on_a_plaintext_listener_is_an_illegal_state(broker: BrokerThread) -> None:
    response = call_once(broker.port, SaslHandshakeRequest(mechanism="PLAIN"))
    assert response.error_code == ErrorCode.illegal_sasl_state
