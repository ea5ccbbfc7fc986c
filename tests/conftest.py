from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

sys.path.insert(0, str(Path(__file__).parent))

if TYPE_CHECKING:
    from broker_thread import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    from broker_thread import BrokerThread

    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()
