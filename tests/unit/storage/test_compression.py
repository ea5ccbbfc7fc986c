"""Codecs, including both snappy framings that clients write."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.compression import XERIAL_MAGIC, compress, decompress


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=100_000), codec=st.sampled_from([0, 1, 2, 3, 4]))
def test_round_trip(data: bytes, codec: int) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_is_written_with_xerial_framing() -> None:
    data = b"abcdefgh" * 20_000  # several 32 KiB blocks
    out = compress(2, data)
    assert out.startswith(XERIAL_MAGIC)
    assert struct.unpack_from(">ii", out, 8) == (1, 1)
    # kafka-python (like the Java client) decodes it.
    assert kafka_codec.snappy_decode(out) == data


def test_snappy_reads_xerial_from_kafka_python() -> None:
    data = bytes(range(256)) * 1000
    framed = kafka_codec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=4096)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(2, framed) == data


def test_snappy_reads_raw_blocks() -> None:
    data = b"raw snappy, as some clients send it " * 100
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data


def test_gzip_reads_multiple_members() -> None:
    assert decompress(1, gzip.compress(b"one ") + gzip.compress(b"two")) == b"one two"


def test_lz4_and_zstd_read_kafka_python_output() -> None:
    data = b"0123456789" * 10_000
    assert decompress(3, kafka_codec.lz4_encode(data)) == data
    assert decompress(4, kafka_codec.zstd_encode(data)) == data


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec: int) -> None:
    for call in (compress, decompress):
        with pytest.raises(KafkaError) as exc:
            call(codec, b"x")
        assert exc.value.error_code == ErrorCode.unsupported_compression_type


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_is_a_corrupt_message(codec: int) -> None:
    garbage = (
        XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x10\x00junk"
        if codec == 2
        else b"\xffjunk" * 10
    )
    with pytest.raises(KafkaError) as exc:
        decompress(codec, garbage)
    assert exc.value.error_code == ErrorCode.corrupt_message
