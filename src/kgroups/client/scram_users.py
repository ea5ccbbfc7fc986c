"""SCRAM users over the wire (DescribeUserScramCredentials,
AlterUserScramCredentials): the calls behind `kgroups users --bootstrap-server`.

As in Kafka's AdminClient the salt and the salted password are made here; the
password itself never leaves the client.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsRequest
from kio.schema.alter_user_scram_credentials.v0.request import (
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0 import DescribeUserScramCredentialsRequest
from kio.schema.describe_user_scram_credentials.v0.request import UserName

from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import i8, i32
from kgroups.security.scram import MECHANISM_TYPES, TYPE_OF_MECHANISM, salted_password

__all__ = ["alter_users", "describe_users"]


async def describe_users(admin: Admin, users: list[str] | None = None) -> dict[str, dict[str, int]]:
    """user -> {mechanism: iterations}; every user when ``users`` is None. A
    named user without credentials is left out."""
    conn = await admin.cluster.any_connection()
    response = await conn.send(
        DescribeUserScramCredentialsRequest(
            users=None if users is None else tuple(UserName(name=u) for u in users)
        ),
        version=conn.version_for(apis.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0),
    )
    if response.error_code != ErrorCode.none:
        raise KafkaError(response.error_code, response.error_message)
    out: dict[str, dict[str, int]] = {}
    for result in response.results:
        if result.error_code == ErrorCode.resource_not_found:
            continue
        if result.error_code != ErrorCode.none:
            raise KafkaError(result.error_code, result.error_message)
        out[result.user] = {
            MECHANISM_TYPES[c.mechanism]: c.iterations
            for c in result.credential_infos
            if c.mechanism in MECHANISM_TYPES
        }
    return out


async def alter_users(
    admin: Admin,
    upsertions: Sequence[tuple[str, str, str, int]] = (),
    deletions: Sequence[tuple[str, str]] = (),
) -> None:
    """Set (user, mechanism, password, iterations) and delete (user, mechanism)."""
    upserts = []
    for user, mechanism, password, iterations in upsertions:
        salt = secrets.token_bytes(32)
        upserts.append(
            ScramCredentialUpsertion(
                name=user,
                mechanism=i8(TYPE_OF_MECHANISM[mechanism]),
                iterations=i32(iterations),
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations),
            )
        )
    conn = await admin.cluster.any_connection()
    response = await conn.send(
        AlterUserScramCredentialsRequest(
            deletions=tuple(
                ScramCredentialDeletion(name=u, mechanism=i8(TYPE_OF_MECHANISM[m]))
                for u, m in deletions
            ),
            upsertions=tuple(upserts),
        ),
        version=conn.version_for(apis.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
    )
    for result in response.results:
        if result.error_code != ErrorCode.none:
            raise KafkaError(result.error_code, result.error_message or f"user {result.user!r}")
