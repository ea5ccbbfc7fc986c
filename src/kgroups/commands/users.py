"""`kgroups users add|list|delete`: SCRAM credentials, either over the wire
(``--bootstrap-server``, AlterUserScramCredentials as kafka-configs.sh sends it,
for a running broker or cluster) or in a stopped broker's data directory
(``--data-dir``, which it reads at start: how the first admin user is made)."""

from __future__ import annotations

from pathlib import Path

from kgroups.client.admin import Admin
from kgroups.client.scram_users import alter_users, describe_users
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.security.credentials import CredentialStore
from kgroups.security.scram import HASHES, MAX_ITERATIONS, MIN_ITERATIONS, new_credential


def _check(user: str, password: str, mechanisms: list[str], iterations: int) -> None:
    if not user:
        raise ValueError("the user name must not be empty")
    if not password:
        raise ValueError("the password must not be empty")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    for mechanism in mechanisms:
        if mechanism not in HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")


def _added(user: str, mechanisms: list[str]) -> str:
    return f"Added {', '.join(mechanisms)} credentials for user {user!r}."


def _listed(users: dict[str, dict[str, int]]) -> str:
    lines = [
        f"{user}\t" + ", ".join(f"{m} (iterations={n})" for m, n in sorted(mechanisms.items()))
        for user, mechanisms in sorted(users.items())
    ]
    return "\n".join(lines) if lines else "(no users)"


def _held(user: str, held: dict[str, int], mechanisms: list[str]) -> list[str]:
    gone = [m for m in mechanisms if m in held]
    if not gone:
        raise ValueError(f"user {user!r} has no {' or '.join(mechanisms)} credentials")
    return gone


def _deleted(user: str, mechanisms: list[str]) -> str:
    return f"Deleted {', '.join(mechanisms)} credentials of user {user!r}."


# -- a stopped broker's data directory -----------------------------------------


def add(data_dir: Path, user: str, password: str, mechanisms: list[str], iterations: int) -> str:
    _check(user, password, mechanisms, iterations)
    store = CredentialStore(data_dir)
    store.apply([(user, m, new_credential(m, password, iterations)) for m in mechanisms], [])
    return _added(user, mechanisms)


def list_users(data_dir: Path) -> str:
    return _listed(CredentialStore(data_dir).users())


def delete(data_dir: Path, user: str, mechanisms: list[str]) -> str:
    store = CredentialStore(data_dir)
    gone = _held(user, store.users().get(user, {}), mechanisms)
    store.apply([], [(user, m) for m in gone])
    return _deleted(user, gone)


# -- over the wire ---------------------------------------------------------------


async def add_remote(
    bootstrap: str,
    user: str,
    password: str,
    mechanisms: list[str],
    iterations: int,
    security: ClientSecurity = PLAINTEXT,
) -> str:
    _check(user, password, mechanisms, iterations)
    admin = Admin(bootstrap, security=security)
    try:
        await alter_users(admin, [(user, m, password, iterations) for m in mechanisms])
    finally:
        await admin.close()
    return _added(user, mechanisms)


async def list_remote(bootstrap: str, security: ClientSecurity = PLAINTEXT) -> str:
    admin = Admin(bootstrap, security=security)
    try:
        return _listed(await describe_users(admin))
    finally:
        await admin.close()


async def delete_remote(
    bootstrap: str, user: str, mechanisms: list[str], security: ClientSecurity = PLAINTEXT
) -> str:
    admin = Admin(bootstrap, security=security)
    try:
        held = (await describe_users(admin, [user])).get(user, {})
        gone = _held(user, held, mechanisms)
        await alter_users(admin, deletions=[(user, m) for m in gone])
    finally:
        await admin.close()
    return _deleted(user, gone)
