"""Record batch compression codecs: 1 gzip, 2 snappy, 3 lz4, 4 zstd.

The broker decompresses to read records (timestamps, compaction, the
coordinator's own log) and, for a topic whose ``compression.type`` names a
codec, to store a producer's batch in that codec instead of its own.

Snappy comes in two shapes on the wire. The Java client (and kafka-python and
librdkafka for compatibility) writes Xerial's stream framing: the magic
``\\x82SNAPPY\\x00``, two int32 version fields, then blocks each prefixed by a
big-endian int32 compressed length. Some clients write one raw snappy block
instead. Both are read; Xerial framing is written, since every client reads it.
LZ4 is the LZ4 frame format (Kafka's v2 batches fixed the old frame checksum bug).

Decompression is bounded: it streams in chunks of at most ``CHUNK`` bytes and
stops with CORRUPT_MESSAGE once the output passes the caller's limit, so a few
kilobytes that would expand to gigabytes (a decompression bomb) cost neither
memory nor more than ``limit`` bytes of work.
"""

from __future__ import annotations

import functools
import struct
import threading
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    import zstandard


# The codec libraries are imported at their first use: most brokers, and most
# test brokers, never see a compressed batch of some codecs, or of any.
@functools.cache
def _cramjam() -> ModuleType:
    import cramjam

    return cramjam


@functools.cache
def _lz4_frame() -> ModuleType:
    import lz4.frame

    frame: ModuleType = lz4.frame
    return frame


__all__ = [
    "GZIP",
    "LZ4",
    "MAX_DECOMPRESSED_BYTES",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "compress",
    "decompress",
    "iter_decompress",
]

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

LZ4_DEFAULT_LEVEL = 9

# Largest piece of output produced at once.
CHUNK = 256 * 1024
# What one batch may decompress to unless the caller says otherwise: Kafka's
# default socket.request.max.bytes, the most a request may carry uncompressed.
MAX_DECOMPRESSED_BYTES = 104857600


def _unsupported(codec: int) -> KafkaError:
    return KafkaError(
        ErrorCode.unsupported_compression_type, f"compression codec {codec} is not supported"
    )


def _corrupt(codec: int, exc: Exception) -> KafkaError:
    return KafkaError(
        ErrorCode.corrupt_message, f"cannot decompress record batch (codec {codec}): {exc}"
    )


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed; ``level`` as Kafka's compression.<codec>.level
    (gzip -1 is zlib's default), None for the library's default."""
    if codec == GZIP:
        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        if level is None:
            return bytes(_cramjam().lz4.compress(data))
        # Independent blocks: the Java client decompresses each block alone.
        # Kafka's default level 9 means lz4's fast compressor, others its HC mode.
        fast = level == LZ4_DEFAULT_LEVEL
        return bytes(
            _lz4_frame().compress(data, compression_level=0 if fast else level, block_linked=False)
        )
    if codec == ZSTD:
        if level is None:
            return bytes(_cramjam().zstd.compress(data))
        return bytes(_cramjam().zstd.compress(data, level=level))
    if codec == NONE:
        return data
    raise _unsupported(codec)


def decompress(codec: int, data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """All of ``data`` decompressed; CORRUPT_MESSAGE past ``limit`` bytes."""
    if codec == NONE:
        return data
    return b"".join(iter_decompress(codec, data, limit))


def iter_decompress(
    codec: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED_BYTES
) -> Iterator[bytes]:
    """``data`` decompressed, in pieces of at most ``CHUNK`` bytes (snappy: of
    one block). Raises CORRUPT_MESSAGE for garbage or once the output passes
    ``limit``, before producing the excess."""
    if codec == GZIP:
        chunks = _gunzip(data)
    elif codec == SNAPPY:
        chunks = _unsnappy(data, limit)
    elif codec == LZ4:
        chunks = _unlz4(data)
    elif codec == ZSTD:
        chunks = _unzstd(data)
    else:
        raise _unsupported(codec)
    total = 0
    try:
        for chunk in chunks:
            total += len(chunk)
            if total > limit:
                raise ValueError(f"it decompresses to more than {limit} bytes")
            yield chunk
    except KafkaError:
        raise
    except Exception as exc:
        # The codec libraries raise assorted types for garbage input.
        raise _corrupt(codec, exc) from exc


def _gunzip(data: bytes | memoryview) -> Iterator[bytes]:
    # A gzip stream may hold several members back to back.
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(31)
        while not d.eof:
            before = len(rest)
            out = d.decompress(rest, CHUNK)
            rest = d.unconsumed_tail
            if not out and not d.eof and len(rest) in (0, before):
                raise ValueError("truncated gzip stream")
            yield out
        rest = d.unused_data


def _unsnappy(data: bytes | memoryview, limit: int) -> Iterator[bytes]:
    view = memoryview(data)
    if bytes(view[: len(XERIAL_MAGIC)]) != XERIAL_MAGIC:
        yield _snappy_block(view, limit)
        return
    pos = len(_XERIAL_HEADER)
    end = len(view)
    total = 0
    while pos < end:
        if pos + 4 > end:
            raise ValueError("truncated xerial block length")
        (n,) = _INT32.unpack_from(view, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise ValueError("truncated xerial block")
        block = _snappy_block(view[pos : pos + n], limit - total)
        total += len(block)
        yield block
        pos += n


def _snappy_block(block: memoryview, limit: int) -> bytes:
    # A raw block states its decompressed length first; snappy would allocate
    # that much before looking further, so check it first.
    if _cramjam().snappy.decompress_raw_len(block) > limit:
        raise ValueError(f"a snappy block decompresses to more than {limit} bytes")
    return bytes(_cramjam().snappy.decompress_raw(block))


def _unlz4(data: bytes | memoryview) -> Iterator[bytes]:
    rest = bytes(data)
    while rest:
        d = _lz4_frame().LZ4FrameDecompressor()
        while not d.eof:
            out = d.decompress(rest, max_length=CHUNK)
            rest = b""
            if not out and d.needs_input and not d.eof:
                raise ValueError("truncated lz4 frame")
            yield out
        rest = d.unused_data


def _unzstd(data: bytes | memoryview) -> Iterator[bytes]:
    # Streaming, so frames without a content size (the Java client's) work too.
    reader = _zstd().stream_reader(bytes(data), read_across_frames=True)
    while chunk := reader.read(CHUNK):
        yield chunk


# A decompressor holds one zstd context, which two threads must not use at
# once (the loop, the log cleaner and telemetry's worker all decompress):
# one per thread.
_ZSTD = threading.local()


def _zstd() -> zstandard.ZstdDecompressor:
    decompressor: zstandard.ZstdDecompressor | None = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        import zstandard  # at the first zstd batch, as the other codecs

        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(_cramjam().snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)
