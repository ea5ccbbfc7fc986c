"""A broker with a SASL_PLAINTEXT listener and known users, and client
settings for each mechanism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgroups.security.credentials import CredentialStore
from kgroups.security.scram import new_credential
from kgroups.testing.thread_broker import ThreadBroker

MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
# alice is a JAAS (PlainLoginModule) user; bob has SCRAM credentials in the store.
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-secret";'
)
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}


def add_scram_user(data_dir: Path, user: str, password: str) -> None:
    store = CredentialStore(data_dir)
    store.apply(
        [(user, m, new_credential(m, password, 4096)) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")],
        [],
    )


def sasl_broker(data_dir: Path, **overrides: str) -> ThreadBroker:
    """Not started; ``overrides`` use Kafka's dotted keys."""
    data_dir.mkdir(parents=True, exist_ok=True)
    add_scram_user(data_dir, "bob", PASSWORDS["bob"])
    settings = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": MECHANISMS,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }
    settings.update(overrides)
    return ThreadBroker(data_dir, settings)


def user_for(mechanism: str) -> str:
    return "alice" if mechanism == "PLAIN" else "bob"


def confluent_config(
    bootstrap: str, mechanism: str, user: str | None = None, password: str | None = None
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        config["enable.sasl.oauthbearer.unsecure.jwt"] = True
        config["sasl.oauthbearer.config"] = f"principal={user or 'carol'}"
    else:
        user = user or user_for(mechanism)
        config["sasl.username"] = user
        config["sasl.password"] = password or PASSWORDS[user]
    return config
