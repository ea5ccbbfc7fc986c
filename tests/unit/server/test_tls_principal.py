from typing import Any

from kgroups.network.tls import peer_subject
from kgroups.security.peer import ConnectionSecurity


class FakeSslObject:
    def __init__(self, cert: dict[str, Any]) -> None:
        self.cert = cert

    def getpeercert(self) -> dict[str, Any]:
        return self.cert


def test_the_subject_is_written_most_specific_first_with_rfc2253_escapes() -> None:
    subject = (
        (("countryName", "US"),),
        (("organizationName", "Acme, Inc."),),
        (("organizationalUnitName", "eng"), ("userId", "42")),
        (("commonName", " #bob "),),  # "#" is escaped only first
    )
    assert (
        peer_subject(FakeSslObject({"subject": subject}))
        == "CN=\\ #bob\\ ,OU=eng+UID=42,O=Acme\\, Inc.,C=US"
    )


def test_no_certificate_is_anonymous() -> None:
    assert peer_subject(FakeSslObject({})) is None
    assert peer_subject(None) is None
    assert ConnectionSecurity.accepted("SSL", "SSL", None).principal == "User:ANONYMOUS"


def test_ssl_names_the_principal_and_sasl_waits_for_authentication() -> None:
    ssl = ConnectionSecurity.accepted("SSL", "SSL", "CN=alice")
    assert (ssl.principal, ssl.authenticated) == ("User:CN=alice", True)
    sasl = ConnectionSecurity.accepted("SASL_SSL", "SASL_SSL", "CN=alice")
    assert (sasl.principal, sasl.authenticated) == ("User:ANONYMOUS", False)
