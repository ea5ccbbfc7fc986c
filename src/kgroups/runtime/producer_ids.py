"""Producer ids for idempotent producers, unique across restarts.

Ids are handed out from blocks; the start of the next block is made durable
before the first id of the current block is given out, so a crash can skip ids
but never repeat one (a repeated id would meet the old producer's sequence
state in the logs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgroups.durable import replace_file

BLOCK_SIZE = 1000
STATE_FILE = "kgroups-producer-ids"


class ProducerIdManager:
    def __init__(self, log_dir: Path, allocate_block: Callable[[int], int] | None = None) -> None:
        # In cluster mode blocks come from the store (``allocate_block(size)``
        # returns the first id of a block no other broker will ever get).
        self._allocate_block = allocate_block
        self._path = log_dir / STATE_FILE
        try:
            self._next = int(self._path.read_text().strip())
        except (FileNotFoundError, ValueError):
            self._next = 0
        self._block_end = self._next

    def next_id(self) -> int:
        if self._next >= self._block_end and self._allocate_block is not None:
            self._next = self._allocate_block(BLOCK_SIZE)
            self._block_end = self._next + BLOCK_SIZE
        elif self._next >= self._block_end:
            self._block_end = self._next + BLOCK_SIZE
            self._persist(self._block_end)
        pid = self._next
        self._next += 1
        return pid

    def _persist(self, value: int) -> None:
        replace_file(self._path, str(value).encode("ascii"))
