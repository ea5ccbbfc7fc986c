"""The client's security keys as the Java client reads them: JAAS lines,
.properties files, and the settings that cannot work refused up front."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.security import PLAINTEXT, ClientSecurity, parse_jaas
from kgroups.commands.command_config import read_properties, security_from

from certificates import Authority

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_jaas_lines_are_read_as_java_reads_them() -> None:
    module, options = parse_jaas(
        f'{SCRAM} required username="alice" password="p\\"w;d" tokenauth=false;'
    )
    assert module == SCRAM
    assert options == {"username": "alice", "password": 'p"w;d', "tokenauth": "false"}
    with pytest.raises(ConfigError):
        parse_jaas('username="alice" password="x";')


def test_sasl_settings_give_the_mechanism_and_credentials() -> None:
    settings = {
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f'{SCRAM} required username="bob" password="pw";',
    }
    security = ClientSecurity.from_config(settings)
    assert (security.protocol, security.mechanism, security.username, security.password) == (
        "SASL_PLAINTEXT",
        "SCRAM-SHA-256",
        "bob",
        "pw",
    )
    assert security.ssl_context is None
    assert "pw" not in repr(ProducerConfig.from_dict({"bootstrap.servers": "h:1", **settings}))
    assert ConsumerConfig.from_dict({"bootstrap.servers": "h:1"}).security is PLAINTEXT


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"security.protocol": "SASL_SSL"}, "GSSAPI"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "PEM"),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent"}, "TLS"),
        ({"security.protocol": "KERBEROS"}, "security.protocol"),
        ({"ssl.truststore.password": "x"}, "not supported"),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;",
            },
            "Krb5LoginModule",
        ),
    ],
)
def test_settings_that_cannot_work_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ProducerConfig.from_dict({"bootstrap.servers": "h:1", **settings})


def test_ssl_settings_make_a_verifying_context(tmp_path: Path) -> None:
    on = ClientSecurity.from_config({"security.protocol": "SSL"})
    off = ClientSecurity.from_config(
        {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}
    )
    assert on.ssl_context is not None and on.ssl_context.check_hostname
    assert off.ssl_context is not None and not off.ssl_context.check_hostname
    assert off.ssl_context.verify_mode.name == "CERT_REQUIRED"


def test_command_config_files_are_java_properties(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# comment\n! another\n"
        "security.protocol = SASL_PLAINTEXT\n"
        "sasl.mechanism:PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '        username="alice" \\\n'
        '        password="a\\\\\\\\b";\n'
    )
    assert read_properties(path)["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="a\\\\b";'
    )
    security = security_from(path)
    assert (security.mechanism, security.username, security.password) == ("PLAIN", "alice", "a\\b")
    assert security_from(None) is PLAINTEXT


def test_an_unreadable_jaas_line_does_not_repeat_its_password() -> None:
    line = f'{SCRAM} required username="alice" password="s3cr\\"et;'
    with pytest.raises(ConfigError) as refused:
        parse_jaas(line)
    assert "s3cr" not in str(refused.value)
    assert "sasl.jaas.config" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        ClientSecurity.from_config(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": line,
            }
        )
    assert "s3cr" not in str(refused.value)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.jaas.config",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
    ],
)
def test_a_bad_password_type_value_is_never_shown(key: str) -> None:
    with pytest.raises(ConfigError, match=key) as refused:
        ProducerConfig.from_dict({"bootstrap.servers": "h:1", key: 73317331})
    assert "73317331" not in str(refused.value)


def test_an_encrypted_key_without_its_password_is_a_config_error(tmp_path: Path) -> None:
    # Without a password callback OpenSSL asks on the terminal (or fails with EINVAL without one).
    keys = Authority(tmp_path).server(password="key-pw")
    settings = {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keys.both),
    }
    with pytest.raises(ConfigError, match=r"encrypted: set ssl\.key\.password") as refused:
        ClientSecurity.from_config(settings)
    assert str(keys.both) in str(refused.value)
    unlocked = ClientSecurity.from_config({**settings, "ssl.key.password": "key-pw"})
    assert unlocked.ssl_context is not None
