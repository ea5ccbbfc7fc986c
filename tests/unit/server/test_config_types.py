"""Every key of every setting table names its type (what DescribeConfigs
reports) and what it does: a setting cannot be added without them."""

from __future__ import annotations

import pytest

from kgroups.config.broker_settings import SETTINGS, Setting, setting_kind
from kgroups.config.client_metrics import (
    CLIENT_METRICS_KEYS,
    client_metrics_config_doc,
    client_metrics_config_kind,
)
from kgroups.config.config_types import ConfigType
from kgroups.config.group_config import GROUP_CONFIG_KEYS, group_config_doc, group_config_kind
from kgroups.config.sensitive import is_sensitive
from kgroups.config.setting_values import integer
from kgroups.partitions.config import TOPIC_CONFIG_KEYS, topic_config_doc, topic_config_kind

KNOWN = set(ConfigType) - {ConfigType.UNKNOWN}


def test_a_broker_setting_without_a_type_cannot_be_made() -> None:
    with pytest.raises(TypeError, match="kind"):
        Setting("some.key", integer, 0, "Some doc.")  # type: ignore[call-arg]


def test_every_broker_setting_has_a_type_and_a_doc() -> None:
    assert [k for k, s in SETTINGS.items() if s.kind not in KNOWN or not s.doc] == []


def test_every_topic_group_and_client_metrics_key_has_a_type_and_a_doc() -> None:
    tables = (
        (TOPIC_CONFIG_KEYS, topic_config_kind, topic_config_doc),
        (GROUP_CONFIG_KEYS, group_config_kind, group_config_doc),
        (CLIENT_METRICS_KEYS, client_metrics_config_kind, client_metrics_config_doc),
    )
    for keys, kind, doc in tables:
        assert [k for k in keys if kind(k) not in KNOWN or not doc(k)] == []


def test_a_per_listener_key_has_its_base_keys_type() -> None:
    assert setting_kind("listener.name.internal.ssl.key.password") is ConfigType.PASSWORD
    assert setting_kind("listener.name.internal.ssl.enabled.protocols") is ConfigType.LIST
    assert setting_kind("listener.name.ext.plain.sasl.jaas.config") is ConfigType.PASSWORD
    oauth = "listener.name.ext.oauthbearer.sasl.oauthbearer.expected.audience"
    assert setting_kind(oauth) is ConfigType.LIST
    handler = "listener.name.ext.oauthbearer.sasl.server.callback.handler.class"
    assert setting_kind(handler) is ConfigType.CLASS
    assert setting_kind("no.such.key") is ConfigType.UNKNOWN


def test_the_secrets_are_the_password_keys() -> None:
    secrets = {k for k in SETTINGS if is_sensitive(k)}
    assert secrets == {
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "cluster.store.url",
    }
    assert is_sensitive("listener.name.sasl_plaintext.plain.sasl.jaas.config")
    assert not is_sensitive("listener.name.sasl_plaintext.ssl.client.auth")
