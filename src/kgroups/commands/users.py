"""`kgroups users add|list|delete`: SCRAM credentials in a broker's data
directory, for a broker that is stopped (it reads them at start). A running
broker's credentials are changed over the wire with AlterUserScramCredentials
(any Kafka AdminClient), since it keeps its own copy and rewrites the file."""

from __future__ import annotations

from pathlib import Path

from kgroups.security.credentials import CredentialStore
from kgroups.security.scram import HASHES, MAX_ITERATIONS, MIN_ITERATIONS, new_credential


def add(data_dir: Path, user: str, password: str, mechanisms: list[str], iterations: int) -> str:
    if not user:
        raise ValueError("the user name must not be empty")
    if not password:
        raise ValueError("the password must not be empty")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    for mechanism in mechanisms:
        if mechanism not in HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    store = CredentialStore(data_dir)
    store.apply([(user, m, new_credential(m, password, iterations)) for m in mechanisms], [])
    return f"Added {', '.join(mechanisms)} credentials for user {user!r}."


def list_users(data_dir: Path) -> str:
    users = CredentialStore(data_dir).users()
    lines = [
        f"{user}\t" + ", ".join(f"{m} (iterations={n})" for m, n in sorted(mechanisms.items()))
        for user, mechanisms in users.items()
    ]
    return "\n".join(lines) if lines else "(no users)"


def delete(data_dir: Path, user: str, mechanisms: list[str]) -> str:
    store = CredentialStore(data_dir)
    held = store.users().get(user, {})
    gone = [m for m in mechanisms if m in held]
    if not gone:
        raise ValueError(f"user {user!r} has no {' or '.join(mechanisms)} credentials")
    store.apply([], [(user, m) for m in gone])
    return f"Deleted {', '.join(gone)} credentials of user {user!r}."
