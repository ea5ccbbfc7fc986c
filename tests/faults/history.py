"""The history of a fault run: every operation as the client saw it, in the
order the events happened, as Jepsen records it.

An operation is an `invoke` followed by its completion: `ok` (it happened),
`fail` (it certainly did not) or `info` (unknown: a timeout, a lost
connection). Events that have no invocation (a record consumed, a partition
assigned by the group) are written as `ok` alone. Times are seconds on one
monotonic clock, shared by every client thread of the process, so events of
different clients compare.

Operations (`f`) and their values:

- produce: invoke {"value"}; ok {"value", "partition", "offset"}
- poll: ok {"records": [[partition, offset, value], ...]} (group members, readers)
- commit: invoke/ok {"group", "offsets": {partition: offset}}
- committed: ok {"group", "offsets"} (a read of the group's committed offsets)
- assigned / revoked: ok {"group", "partitions"} (lost is a revocation too)
- txn: reserved for transactional workloads, ok {"values", "outcome": "commit"|"abort"}
- final-read: ok {"partition", "records": [[offset, value], ...]}
- nemesis: info {"fault", "target", "phase": "start"|"stop"}
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"


@dataclass(frozen=True)
class Op:
    index: int
    time: float
    process: str
    type: str
    f: str
    value: dict[str, Any] = field(default_factory=dict)


class History:
    """Thread-safe, append-only."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self.ops: list[Op] = []

    def now(self) -> float:
        return float(self._clock() - self._start)

    def add(self, process: str, type_: str, f: str, **value: Any) -> Op:
        with self._lock:
            op = Op(len(self.ops), self.now(), process, type_, f, value)
            self.ops.append(op)
            return op

    def save(self, path: Path) -> None:
        with self._lock, path.open("w") as out:
            for op in self.ops:
                out.write(json.dumps(asdict(op)) + "\n")

    @staticmethod
    def load(path: Path) -> list[Op]:
        return [Op(**json.loads(line)) for line in path.read_text().splitlines() if line]
