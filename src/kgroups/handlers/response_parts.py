"""A response frame whose records stay in their log files until they are sent.

A Fetch answered from local segment files carries ``FileRegion`` objects where
its records go (records/file_region.py). Encoding it collects what kio writes
in order: the bytes of every field, and the regions themselves where their
bytes would be copied (their length prefixes are written from their length,
as for bytes). What is written between two regions is joined into one part;
the frame's size prefix and the response header open the first. The
connection writes the bytes and hands the regions from file to socket
(network/file_sender.py), so the records never pass through Python objects.

A region smaller than ``INLINE_BYTES`` is read and joined with its neighbours
instead: for a small batch a read is cheaper than the extra system calls of a
separate send.
"""

from __future__ import annotations

import struct
from typing import Any

from kgroups.records.file_region import FileRegion

__all__ = ["INLINE_BYTES", "ResponseParts", "encode_parts"]

INLINE_BYTES = 16 * 1024
_SIZE = struct.Struct(">i")


class ResponseParts:
    """One response frame: bytes and file regions, to be written in this order."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes | FileRegion], size: int) -> None:
        self.parts = parts
        self.size = size
        """Bytes of the whole frame, its size prefix included."""

    def __len__(self) -> int:
        return self.size

    def to_bytes(self) -> bytes:
        """The frame in memory, its regions read (for a path that needs bytes)."""
        return b"".join(p.read() if isinstance(p, FileRegion) else p for p in self.parts)


class _Collector:
    """What kio's writer needs of a buffer: ``write``, here appending to a list."""

    __slots__ = ("write",)

    def __init__(self, chunks: list[Any]) -> None:
        self.write = chunks.append


def encode_parts(write_response: Any, header: bytes, response: object) -> bytes | ResponseParts:
    """The frame of ``response`` (with ``header``): bytes when no region is
    worth sending from its file, else its parts."""
    chunks: list[Any] = []
    write_response(_Collector(chunks), response)
    size = len(header)
    regions = False
    for i, chunk in enumerate(chunks):
        if chunk.__class__ is FileRegion:
            if chunk.size < INLINE_BYTES:
                chunks[i] = chunk = chunk.read()
            else:
                regions = True
        size += len(chunk)
    prefix = _SIZE.pack(size)
    if not regions:
        return b"".join([prefix, header, *chunks])
    parts: list[bytes | FileRegion] = []
    run: list[bytes] = [prefix, header]
    for chunk in chunks:
        if chunk.__class__ is FileRegion:
            parts.append(b"".join(run))
            parts.append(chunk)
            run = []
        else:
            run.append(chunk)
    if run:
        parts.append(b"".join(run))
    return ResponseParts(parts, size + len(prefix))
