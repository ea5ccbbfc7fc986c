"""Record batch compression codecs: 1 gzip, 2 snappy, 3 lz4, 4 zstd.

The broker only decompresses to read records (timestamps, compaction, the
coordinator's own log); it stores batches exactly as producers compressed them.

Snappy comes in two shapes on the wire. The Java client (and kafka-python and
librdkafka for compatibility) writes Xerial's stream framing: the magic
``\\x82SNAPPY\\x00``, two int32 version fields, then blocks each prefixed by a
big-endian int32 compressed length. Some clients write one raw snappy block
instead. Both are read; Xerial framing is written, since every client reads it.
LZ4 is the LZ4 frame format (Kafka's v2 batches fixed the old frame checksum bug).
"""

from __future__ import annotations

import struct
import zlib

import cramjam

from kgroups.errors import ErrorCode, KafkaError

__all__ = ["GZIP", "LZ4", "NONE", "SNAPPY", "ZSTD", "compress", "decompress"]

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# The Java client's SnappyOutputStream block size.
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")


def _unsupported(codec: int) -> KafkaError:
    return KafkaError(
        ErrorCode.unsupported_compression_type, f"compression codec {codec} is not supported"
    )


def _corrupt(codec: int, exc: Exception) -> KafkaError:
    return KafkaError(
        ErrorCode.corrupt_message, f"cannot decompress record batch (codec {codec}): {exc}"
    )


def compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    if codec == NONE:
        return data
    raise _unsupported(codec)


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == GZIP:
            return _gunzip(data)
        if codec == SNAPPY:
            if data.startswith(XERIAL_MAGIC):
                return _xerial_decompress(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            # cramjam streams, so frames without a content size (Java's) work too.
            return bytes(cramjam.zstd.decompress(data))
    except KafkaError:
        raise
    except Exception as exc:
        # The codec libraries raise assorted types for garbage input.
        raise _corrupt(codec, exc) from exc
    if codec == NONE:
        return data
    raise _unsupported(codec)


def _gunzip(data: bytes) -> bytes:
    # A gzip stream may hold several members back to back.
    parts = []
    while data:
        d = zlib.decompressobj(31)
        parts.append(d.decompress(data))
        if not d.eof:
            raise ValueError("truncated gzip stream")
        data = d.unused_data
    return b"".join(parts)


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _xerial_decompress(data: bytes) -> bytes:
    parts = []
    view = memoryview(data)
    pos = len(_XERIAL_HEADER)
    end = len(data)
    while pos < end:
        if pos + 4 > end:
            raise ValueError("truncated xerial block length")
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise ValueError("truncated xerial block")
        parts.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + n])))
        pos += n
    return b"".join(parts)
