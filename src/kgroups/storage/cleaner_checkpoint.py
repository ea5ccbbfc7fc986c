"""``cleaner-offset-checkpoint``: how far a compacted partition's log is clean.

One small file in the partition's directory, so it lives and dies with the
partition. Like Kafka's offset checkpoint files it is text: a version line
(``0``) and the offset below which the log has been cleaned at least once. The
cleaner rewrites it after each successful swap; truncating the log below it
lowers it (data rewritten after a truncation is dirty again). A missing or
unreadable file means nothing is clean yet, which costs a re-clean, never data.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from kgroups.durable import replace_file

__all__ = ["CHECKPOINT_FILE", "lower_clean_offset", "read_clean_offset", "write_clean_offset"]

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
_VERSION = "0"


def read_clean_offset(directory: Path) -> int | None:
    """The checkpointed clean offset, or None if there is none (or it is unreadable)."""
    path = directory / CHECKPOINT_FILE
    try:
        text = path.read_text("ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    lines = text.split("\n")
    if len(lines) >= 2 and lines[0] == _VERSION and lines[1].isdigit():
        return int(lines[1])
    log.warning("ignoring %s: not a version %s checkpoint", path, _VERSION)
    return None


def write_clean_offset(directory: Path, offset: int) -> None:
    """Replace the checkpoint (through a ``.tmp`` file, so never half written)."""
    replace_file(directory / CHECKPOINT_FILE, f"{_VERSION}\n{offset}\n".encode("ascii"))


def lower_clean_offset(directory: Path, offset: int) -> None:
    """After a truncation to ``offset``: nothing at or above it is clean any more."""
    current = read_clean_offset(directory)
    if current is not None and current > offset:
        with contextlib.suppress(FileNotFoundError):  # the partition is being deleted
            write_clean_offset(directory, offset)
