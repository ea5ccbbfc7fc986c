"""The client side of SCRAM: RFC 7677's example exchange byte for byte, a
round trip with the server side, and a server that does not know the
credential caught by its signature."""

from __future__ import annotations

import pytest
from test_scram import CLIENT_FINAL, CLIENT_FIRST, SALT, SERVER_FINAL, SERVER_FIRST

from kgroups.security.scram import ScramClient, ScramFailure, ScramServer, new_credential


def test_the_rfc_7677_example_exchange() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == CLIENT_FIRST
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)
    with pytest.raises(ScramFailure, match="signature"):
        client.verify(b"v=" + b"A" * 44)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_round_trip_with_the_server_side(mechanism: str) -> None:
    credentials = {"a,b=c": new_credential(mechanism, "secret", 4096, SALT)}
    client, server = ScramClient(mechanism, "a,b=c", "secret"), ScramServer(mechanism)
    server_first = server.first(client.first(), credentials)
    client.verify(server.final(client.final(server_first)))
    assert server.complete and server.user == "a,b=c"

    wrong, server = ScramClient(mechanism, "a,b=c", "guess"), ScramServer(mechanism)
    server_first = server.first(wrong.first(), credentials)
    with pytest.raises(ScramFailure, match="invalid credentials"):
        server.final(wrong.final(server_first))


def test_a_server_first_message_that_cannot_be_trusted_is_refused() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    client.first()
    with pytest.raises(ScramFailure, match="nonce"):
        client.final(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(ScramFailure, match="iteration"):
        client.final(b"r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1")
