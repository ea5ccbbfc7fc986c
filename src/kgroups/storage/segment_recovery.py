"""Recovering a segment after a crash: every batch is checked (length, magic,
CRC32C, offsets) while the indexes are rebuilt, and the file is cut at the first
bad batch (a write the crash interrupted, or damage).
"""

from __future__ import annotations

import logging
from typing import Protocol

from kgroups.records.batch import HEADER_SIZE, BatchHeader, batch_crc, read_header
from kgroups.storage.append_file import AppendFile

__all__ = ["INT32_MAX", "RECOVERY_CHUNK", "recover_segment"]

log = logging.getLogger(__name__)

# Offsets within a segment are stored relative to its base, as int32.
INT32_MAX = 2**31 - 1
RECOVERY_CHUNK = 1024 * 1024


class RecoverableSegment(Protocol):
    """What recovery needs of a segment (a protocol, so this module does not
    import the segment that calls it)."""

    log: AppendFile
    base_offset: int

    def reset_indexes(self) -> None: ...

    def append_indexes(self, position: int, header: BatchHeader) -> None: ...


def recover_segment(segment: RecoverableSegment) -> int:
    """Check every batch, rebuild the indexes, cut off anything bad at the end.

    Returns the number of bytes truncated.
    """
    segment.reset_indexes()
    file_size = segment.log.size
    pos = 0
    buf = b""
    buf_start = 0
    expected_offset = segment.base_offset
    problem = None
    while pos < file_size:
        offset = pos - buf_start
        if offset + HEADER_SIZE > len(buf):
            buf = segment.log.pread(min(RECOVERY_CHUNK, file_size - pos), pos)
            buf_start, offset = pos, 0
            if len(buf) < HEADER_SIZE:
                problem = "partial batch header"
                break
        header = read_header(buf, offset)
        size = header.batch_length + 12
        if header.magic != 2:
            problem = f"unsupported magic {header.magic}"
            break
        if size < HEADER_SIZE or pos + size > file_size:
            problem = f"batch length {header.batch_length} runs past the end"
            break
        if header.base_offset < expected_offset or header.last_offset_delta < 0:
            problem = f"batch offsets {header.base_offset}+{header.last_offset_delta} out of order"
            break
        if header.last_offset - segment.base_offset > INT32_MAX:
            problem = f"offset {header.last_offset} too far from the segment base"
            break
        if offset + size > len(buf):
            buf = segment.log.pread(max(size, min(RECOVERY_CHUNK, file_size - pos)), pos)
            buf_start, offset = pos, 0
        with memoryview(buf) as view:
            crc = batch_crc(view[offset : offset + size], size)
        if crc != header.crc:
            problem = f"CRC mismatch (stored {header.crc:#x}, computed {crc:#x})"
            break
        segment.append_indexes(pos, header)
        expected_offset = header.next_offset
        pos += size
    truncated = file_size - pos
    if truncated:
        log.warning(
            "%s: %s at position %d (offset %d); truncating %d bytes",
            segment.log.path,
            problem,
            pos,
            expected_offset,
            truncated,
        )
        segment.log.truncate(pos)
    return truncated
