"""The client's security keys as the Java client reads them: JAAS lines,
.properties files, and the settings that cannot work refused up front."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from kio.schema.sasl_handshake.v1 import SaslHandshakeResponse

from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.exceptions import AuthenticationFailedError
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.security import PLAINTEXT, ClientSecurity, parse_jaas
from kgroups.commands.command_config import read_properties, security_from
from kgroups.errors import ErrorCode

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


def test_the_java_clients_tls_version_and_cipher_keys_shape_the_context() -> None:
    ssl_on = {"bootstrap.servers": "h:1", "security.protocol": "SSL"}
    default = ProducerConfig.from_dict(ssl_on).security.ssl_context
    assert default is not None
    assert (default.minimum_version, default.maximum_version) == (
        ssl.TLSVersion.TLSv1_2,
        ssl.TLSVersion.TLSv1_3,
    )
    only_12 = ProducerConfig.from_dict({**ssl_on, "ssl.enabled.protocols": "TLSv1.2"})
    capped = ConsumerConfig.from_dict({**ssl_on, "ssl.protocol": "TLSv1.2"})
    only_13 = ConsumerConfig.from_dict({**ssl_on, "ssl.enabled.protocols": ["TLSv1.3"]})
    for config, versions in ((only_12, (2, 2)), (capped, (2, 2)), (only_13, (3, 3))):
        context = config.security.ssl_context
        assert context is not None
        assert (context.minimum_version, context.maximum_version) == tuple(
            ssl.TLSVersion[f"TLSv1_{v}"] for v in versions
        )
    ciphers = ProducerConfig.from_dict(
        {**ssl_on, "ssl.cipher.suites": "ECDHE-ECDSA-AES128-GCM-SHA256"}
    ).security.ssl_context
    assert ciphers is not None
    assert {c["name"] for c in ciphers.get_ciphers() if c["protocol"] == "TLSv1.2"} == {
        "ECDHE-ECDSA-AES128-GCM-SHA256"
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
        ({"ssl.protocol": "SSLv3"}, "ssl.protocol"),
        ({"ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLSv1.2"}, "no TLS version"),
        ({"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, "OpenSSL"),
        ({"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}, "ssl.keystore.certificate.chain"),
        ({"ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c",
          "ssl.keystore.location": "/x.pem"}, "both"),
        ({"ssl.truststore.certificates": "c", "ssl.truststore.location": "/x.pem"}, "both"),
        ({"ssl.engine.factory.class": "com.example.Engine"}, "not supported"),
    ],
)  # fmt: skip
def test_tls_settings_that_cannot_work_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ProducerConfig.from_dict(
            {"bootstrap.servers": "h:1", "security.protocol": "SSL", **settings}
        )


def test_jvm_only_tls_tuning_keys_are_accepted_and_ignored() -> None:
    jvm_only = {
        "ssl.keymanager.algorithm": "SunX509",
        "ssl.trustmanager.algorithm": "PKIX",
        "ssl.secure.random.implementation": "SHA1PRNG",
        "ssl.provider": "SunJSSE",
    }
    config = ConsumerConfig.from_dict(
        {"bootstrap.servers": "h:1", "security.protocol": "SSL", **jvm_only}
    )
    assert config.security.protocol == "SSL"
    assert ClientSecurity.from_config(jvm_only, kind="command") is PLAINTEXT


def test_inline_pem_stores_are_read_with_escaped_line_breaks(tmp_path: Path) -> None:
    ca = Authority(tmp_path)
    keys = ca.server()
    inline = {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": keys.key.read_text().replace("\n", "\\n"),
        "ssl.keystore.certificate.chain": keys.cert.read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca.cert.read_text().replace("\n", "\\n"),
    }
    context = ClientSecurity.from_config(inline).ssl_context
    assert context is not None
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["Test CA"]
    bad_chain = {**inline, "ssl.keystore.certificate.chain": ca.cert.read_text()}
    with pytest.raises(ConfigError, match="TLS"):
        ClientSecurity.from_config(bad_chain)


class _Handshaking:
    """A broker connection that answers SaslHandshake with `error_code`."""

    def __init__(self, error_code: ErrorCode) -> None:
        self.error_code = error_code

    def version_for(self, api_key: int, lowest: int, highest: int) -> int:
        return highest

    async def send(self, request: Any, *, version: int | None = None) -> Any:
        return SaslHandshakeResponse(error_code=self.error_code, mechanisms=("PLAIN",))


@pytest.mark.parametrize(
    ("error_code", "says", "does_not_say"),
    [
        (ErrorCode.unsupported_sasl_mechanism, "not enabled", "unexpected"),
        (ErrorCode.illegal_sasl_state, "unexpected", "not enabled"),
        (ErrorCode.unknown_server_error, "UNKNOWN_SERVER_ERROR", "not enabled"),
    ],
)
def test_a_refused_sasl_handshake_says_why(
    error_code: ErrorCode, says: str, does_not_say: str
) -> None:
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": f'{SCRAM} required username="bob" password="pw";',
        }
    )
    with pytest.raises(AuthenticationFailedError) as refused:
        asyncio.run(security.authenticate(_Handshaking(error_code)))
    assert refused.value.error_code == error_code
    message = str(refused.value)
    assert says in message and does_not_say not in message
    assert "['PLAIN']" in message and "SCRAM-SHA-256" in message
