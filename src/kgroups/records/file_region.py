"""Whole record batches as they lie in a log file, to be sent without reading them.

A Fetch from a local log answers each partition with a byte range of one
segment file. Instead of reading that range into memory and copying it into the
encoded response, the response carries a ``FileRegion`` where the records go,
and the connection hands the range from the file to the socket (``os.sendfile``,
see network/file_sender.py). A region has a length, so the response's length
prefixes are written as for bytes; it is not bytes, so an encoder that would
copy it fails instead of writing a wrong frame.

The region names its file through ``RegionSource``, which checks, at each send,
that the file is still open: a segment deleted (retention, compaction) after
the response was built makes the send fail, never read another file that got
the same descriptor number.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["FileRegion", "RegionGone", "RegionSource"]


class RegionGone(OSError):
    """The file of a region was closed or cut short before it was all sent."""


class RegionSource(Protocol):
    def send_to(self, out_fd: int, position: int, count: int) -> int:
        """``os.sendfile`` from this file to ``out_fd``: the bytes sent (0 at the
        file's end); RegionGone once the file is closed."""
        ...

    def pread(self, n: int, position: int) -> bytes: ...


class FileRegion:
    """``size`` bytes of ``source`` from ``position``: whole batches, the next
    offset after them ``end_offset``."""

    __slots__ = ("end_offset", "position", "size", "source")

    def __init__(self, source: RegionSource, position: int, size: int, end_offset: int) -> None:
        self.source = source
        self.position = position
        self.size = size
        self.end_offset = end_offset

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The bytes, read into memory (for a path that cannot send the file)."""
        data = self.source.pread(self.size, self.position)
        if len(data) != self.size:
            raise RegionGone(f"{self.size} bytes expected at {self.position}, {len(data)} read")
        return data

    def __repr__(self) -> str:
        return f"FileRegion({self.source!r}, {self.position}, {self.size})"
