"""Kafka's offset checkpoint files: ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` in a log directory.

The format is Kafka's: a version line ``0``, a count, then one
``<topic> <partition> <offset>`` line per partition. A file is replaced
whole, atomically and durably, so a crash leaves the old one or the new one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from kgroups.durable import replace_file

__all__ = ["read_checkpoint", "write_checkpoint"]

log = logging.getLogger(__name__)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """The offsets in ``path``; none if it is missing or unreadable (logged)."""
    try:
        lines = path.read_text("utf-8").splitlines()
        if lines[0] != "0" or int(lines[1]) != len(lines) - 2:
            raise ValueError("not a version 0 checkpoint")
        points = {}
        for line in lines[2:]:
            topic, partition, offset = line.split(" ")
            points[(topic, int(partition))] = int(offset)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, IndexError, UnicodeDecodeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    return points


def write_checkpoint(path: Path, points: Mapping[tuple[str, int], int]) -> None:
    """Replace ``path`` with ``points`` (fsynced, atomically)."""
    lines = ["0", str(len(points))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in points.items()]
    replace_file(path, ("\n".join(lines) + "\n").encode())
