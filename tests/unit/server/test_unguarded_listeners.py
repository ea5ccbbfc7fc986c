import logging

import pytest

from kgroups.config.broker_config import BrokerConfig
from kgroups.server.broker import warn_if_unguarded


def warnings(caplog: pytest.LogCaptureFixture, props: dict[str, str]) -> list[str]:
    config = BrokerConfig(props)
    with caplog.at_level(logging.WARNING, "kgroups.server.broker"):
        warn_if_unguarded(config, config.listener_specs())
    return [r.getMessage() for r in caplog.records]


def test_an_unconfigured_broker_stays_on_loopback_without_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert warnings(caplog, {}) == []


def test_a_plaintext_listener_on_every_interface_without_authorizer_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    (message,) = warnings(
        caplog,
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,OPEN://:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OPEN:PLAINTEXT",
        },
    )
    assert "listener OPEN" in message and "authorizer.class.name" in message


def test_an_authorizer_silences_the_warning(caplog: pytest.LogCaptureFixture) -> None:
    props = {
        "listeners": "PLAINTEXT://:9092",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    }
    assert warnings(caplog, props) == []
