"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).

Who may call them (DESCRIBE, ALTER on the Cluster) is checked in
handlers/access/cluster.py when an authorizer is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.alter_user_scram_credentials.v0 import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from kio.schema.alter_user_scram_credentials.v0.request import (
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.alter_user_scram_credentials.v0.response import AlterUserScramCredentialsResult
from kio.schema.describe_user_scram_credentials.v0 import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kio.schema.describe_user_scram_credentials.v0.response import (
    CredentialInfo,
    DescribeUserScramCredentialsResult,
)
from kio.static.primitive import i8, i32

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    TYPE_OF_MECHANISM,
    ScramCredential,
    credential_from_salted,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def describe(
    broker: BrokerApi, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    known = broker.sasl.credentials.users()
    asked = [u.name for u in request.users or ()]
    results = []
    if not asked:
        asked = list(known)
    for user in dict.fromkeys(asked):
        if asked.count(user) > 1:
            results.append(_described(user, ErrorCode.duplicate_resource, "Duplicate user name"))
        elif user not in known:
            results.append(
                _described(
                    user,
                    ErrorCode.resource_not_found,
                    "Attempt to describe a user credential that does not exist",
                )
            )
        else:
            infos = tuple(
                CredentialInfo(mechanism=i8(TYPE_OF_MECHANISM[m]), iterations=i32(n))
                for m, n in known[user].items()
            )
            results.append(_described(user, ErrorCode.none, None, infos))
    return DescribeUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        results=tuple(results),
    )


def _described(
    user: str, error: ErrorCode, message: str | None, infos: tuple[CredentialInfo, ...] = ()
) -> DescribeUserScramCredentialsResult:
    return DescribeUserScramCredentialsResult(
        user=user, error_code=error, error_message=message, credential_infos=infos
    )


async def alter(
    broker: BrokerApi, ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    store = broker.sasl.credentials
    known = store.users()
    changes: tuple[ScramCredentialDeletion | ScramCredentialUpsertion, ...] = (
        *request.deletions,
        *request.upsertions,
    )
    errors: dict[str, tuple[ErrorCode, str]] = {}
    seen: dict[tuple[str, int], int] = {}
    for change in changes:
        key = (change.name, change.mechanism)
        seen[key] = seen.get(key, 0) + 1

    def refuse(user: str, error: ErrorCode, message: str) -> None:
        errors.setdefault(user, (error, message))

    for change in changes:
        user, mechanism = change.name, MECHANISM_TYPES.get(change.mechanism)
        if not user:
            refuse(user, ErrorCode.unacceptable_credential, "Username must not be empty")
        elif mechanism is None:
            refuse(user, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
        elif seen[(change.name, change.mechanism)] > 1:
            refuse(user, ErrorCode.duplicate_resource, "A user credential cannot be altered twice")
    deletions: list[tuple[str, str]] = []
    for d in request.deletions:
        mechanism = MECHANISM_TYPES.get(d.mechanism)
        if d.name in errors or mechanism is None:
            continue
        if mechanism not in known.get(d.name, {}):
            refuse(
                d.name,
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        else:
            deletions.append((d.name, mechanism))
    upserts: list[tuple[str, str, ScramCredential]] = []
    for u in request.upsertions:
        mechanism = MECHANISM_TYPES.get(u.mechanism)
        if u.name in errors or mechanism is None:
            continue
        if not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
            refuse(
                u.name,
                ErrorCode.unacceptable_credential,
                f"Iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}",
            )
        elif not u.salt or not u.salted_password:
            refuse(u.name, ErrorCode.unacceptable_credential, "Salt and password must be set")
        else:
            credential = credential_from_salted(mechanism, u.salted_password, u.salt, u.iterations)
            upserts.append((u.name, mechanism, credential))
    # A user with any refused change keeps all of its credentials as they were.
    deletions = [d for d in deletions if d[0] not in errors]
    upserts = [u for u in upserts if u[0] not in errors]
    if (deletions or upserts) and broker.cluster is not None:
        await broker.cluster.alter_credentials(upserts, deletions)  # every broker's
    elif deletions or upserts:
        store.apply(upserts, deletions)
    users = dict.fromkeys(c.name for c in changes)
    results = tuple(
        AlterUserScramCredentialsResult(
            user=user,
            error_code=errors[user][0] if user in errors else ErrorCode.none,
            error_message=errors[user][1] if user in errors else None,
        )
        for user in users
    )
    return AlterUserScramCredentialsResponse(throttle_time=NO_THROTTLE, results=results)
