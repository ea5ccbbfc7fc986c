import struct

import pytest

from kgroups.protocol.header import MalformedHeader, read_request_header, response_header


def _header(key: int, version: int, correlation: int, client: bytes | None) -> bytes:
    out = struct.pack(">hhi", key, version, correlation)
    if client is None:
        return out + struct.pack(">h", -1)
    return out + struct.pack(">h", len(client)) + client


def test_v1_header() -> None:
    frame = _header(3, 1, 42, b"cli") + b"body"
    header, pos = read_request_header(frame, flexible=False)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 1, 42)
    assert header.client_id == "cli"
    assert frame[pos:] == b"body"


def test_v2_header_skips_tagged_fields() -> None:
    # two tagged fields: tag 0 with 3 bytes, tag 5 with 1 byte
    frame = _header(18, 3, 7, None) + bytes([2, 0, 3, 1, 2, 3, 5, 1, 9]) + b"rest"
    header, pos = read_request_header(frame, flexible=True)
    assert header.client_id is None
    assert frame[pos:] == b"rest"


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x03",  # shorter than key+version+correlation
        struct.pack(">hhi", 3, 1, 1) + struct.pack(">h", 10) + b"abc",  # truncated client id
        struct.pack(">hhi", 3, 1, 1) + struct.pack(">h", -7),  # bad client id length
    ],
)
def test_malformed_headers(frame: bytes) -> None:
    with pytest.raises(MalformedHeader):
        read_request_header(frame, flexible=False)


def test_truncated_tagged_fields() -> None:
    frame = _header(18, 3, 7, b"x") + bytes([1, 0, 50])
    with pytest.raises(MalformedHeader):
        read_request_header(frame, flexible=True)


def test_response_header() -> None:
    assert response_header(5, flexible=False) == b"\x00\x00\x00\x05"
    assert response_header(5, flexible=True) == b"\x00\x00\x00\x05\x00"
