"""A broker with a SASL_PLAINTEXT listener and known users, and client
settings for each mechanism and each of the three Kafka clients."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from kgroups.security.credentials import CredentialStore
from kgroups.security.scram import new_credential
from kgroups.testing.thread_broker import ThreadBroker

from certificates import Issued

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
    settings = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": MECHANISMS}
    settings.update(overrides)
    # alice is a PLAIN user of each SASL listener (a JAAS key of a listener the
    # broker does not have would stop it at start).
    for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
        if f"{listener}://" in settings["listeners"]:
            settings.setdefault(f"listener.name.{listener.lower()}.plain.sasl.jaas.config", JAAS)
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


def unsecured_jwt(user: str, lifetime_s: int = 3600) -> str:
    """A token for Kafka's unsecured OAUTHBEARER validator: an unsigned JWS."""

    def part(claims: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': user, 'iat': now, 'exp': now + lifetime_s})}."


CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")


def client_settings(
    client: str,
    bootstrap: str,
    protocol: str,
    mechanism: str | None = None,
    *,
    ca: Path | None = None,
    password: str | None = None,
    certificate: Issued | None = None,
) -> dict[str, Any]:
    """Settings for ``client`` (one of CLIENTS) on a listener of security
    ``protocol``: the known user of ``mechanism`` (or ``password`` instead of
    theirs), and on a TLS listener ``ca`` as the trusted CA and ``certificate``
    as the client's own."""
    if client == "confluent-kafka":
        if mechanism is None:
            config: dict[str, Any] = {"bootstrap.servers": bootstrap}
        else:
            config = confluent_config(bootstrap, mechanism, password=password)
        config["security.protocol"] = protocol
        if ca is not None:
            config["ssl.ca.location"] = str(ca)
        if certificate is not None:
            config["ssl.certificate.location"] = str(certificate.cert)
            config["ssl.key.location"] = str(certificate.key)
        return config
    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    if mechanism == "OAUTHBEARER":
        settings["sasl_mechanism"] = mechanism
        settings["sasl_oauth_token_provider"] = _token_provider(client, "carol")
    elif mechanism is not None:
        user = user_for(mechanism)
        settings["sasl_mechanism"] = mechanism
        settings["sasl_plain_username"] = user
        settings["sasl_plain_password"] = password or PASSWORDS[user]
    cert = None if certificate is None else str(certificate.cert)
    key = None if certificate is None else str(certificate.key)
    if ca is not None and client == "aiokafka":
        from aiokafka.helpers import create_ssl_context

        settings["ssl_context"] = create_ssl_context(cafile=str(ca), certfile=cert, keyfile=key)
    elif ca is not None:
        settings.update(ssl_cafile=str(ca), ssl_certfile=cert, ssl_keyfile=key)
    return settings


def _token_provider(client: str, user: str) -> object:
    if client == "aiokafka":
        from aiokafka.abc import AbstractTokenProvider as AioTokenProvider

        class AioUnsecured(AioTokenProvider):
            async def token(self) -> str:
                return unsecured_jwt(user)

        return AioUnsecured()
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Unsecured(AbstractTokenProvider):
        def token(self) -> str:
            return unsecured_jwt(user)

    return Unsecured()
