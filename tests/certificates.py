"""Throwaway certificate authorities and certificates for TLS tests, as PEM files."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Issued:
    cert: Path
    """The certificate chain (PEM)."""
    key: Path
    """The private key (PEM, unencrypted unless a password was given)."""
    both: Path
    """Key and chain in one file, as ssl.keystore.location holds them."""


class Authority:
    """A CA that issues server and client certificates into a directory."""

    def __init__(self, directory: Path, name: str = "Test CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self._cert = (
            _builder(self._name, self._name, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert = directory / f"{name.replace(' ', '_')}.pem"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def server(self, file_name: str = "server", password: str | None = None) -> Issued:
        """A certificate for localhost and 127.0.0.1."""
        names = x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        )
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
        return self._issue(file_name, subject, names, password)

    def client(self, *, cn: str, ou: str = "", file_name: str = "client") -> Issued:
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example")]
        if ou:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
        return self._issue(file_name, x509.Name(attributes), None, None)

    def _issue(
        self,
        file_name: str,
        subject: x509.Name,
        names: x509.SubjectAlternativeName | None,
        password: str | None,
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _builder(subject, self._name, key.public_key())
        if names is not None:
            builder = builder.add_extension(names, critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        issued = Issued(
            self.directory / f"{file_name}.crt",
            self.directory / f"{file_name}.key",
            self.directory / f"{file_name}.pem",
        )
        issued.cert.write_bytes(cert_pem)
        issued.key.write_bytes(key_pem)
        issued.both.write_bytes(key_pem + cert_pem)
        return issued


def broker_tls_settings(server: Issued, ca_cert: Path) -> dict[str, str]:
    """The broker's ssl.* keys for ``server``'s key and chain, trusting ``ca_cert``."""
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.both),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_cert),
    }


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
