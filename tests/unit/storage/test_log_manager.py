"""Discovering, creating and deleting partition logs in a log directory."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from storage_helpers import NOW, make_batch

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.log_manager import LogManager, parse_partition_dir


def test_parse_partition_dir() -> None:
    assert parse_partition_dir("orders-0") == ("orders", 0)
    assert parse_partition_dir("my.topic-with-dashes-12") == ("my.topic-with-dashes", 12)
    assert parse_partition_dir("__consumer_offsets-49") == ("__consumer_offsets", 49)
    for name in ("orders", "orders-", "-1", "orders-x", "orders-01", ".hidden-1"):
        assert parse_partition_dir(name) is None, name


def test_create_reopen_and_discover(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW)
    a = manager.create("a.b-c", 0)
    b = manager.create("a.b-c", 1, LogConfig(segment_bytes=1000))
    assert manager.create("a.b-c", 0) is a
    a.append(make_batch(3), NOW)
    b.append(make_batch(5), NOW)
    assert manager.get("a.b-c", 2) is None
    assert {(t, p) for t, p, _ in manager.logs()} == {("a.b-c", 0), ("a.b-c", 1)}
    manager.close()
    assert (tmp_path / "cleanly_shutdown").exists()

    manager = LogManager(tmp_path, LogConfig())
    manager.open_all(NOW, {"a.b-c": LogConfig(segment_bytes=2000)})
    assert not (tmp_path / "cleanly_shutdown").exists()
    reopened_a = manager.get("a.b-c", 0)
    reopened_b = manager.get("a.b-c", 1)
    assert reopened_a is not None and reopened_b is not None
    assert (reopened_a.log_end_offset, reopened_b.log_end_offset) == (3, 5)
    assert reopened_a.config.segment_bytes == 2000
    manager.close()


def test_delete(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.open_all(NOW)
    manager.create("t", 0, now_ms=NOW).append(make_batch(1), NOW)
    assert manager.delete("t", 0)
    assert not manager.delete("t", 0)
    assert manager.get("t", 0) is None
    assert not (tmp_path / "t-0").exists()
    # Half-deleted leftovers are removed at the next open.
    (tmp_path / f"t-1.{'0' * 32}-delete").mkdir()
    manager.close()
    manager = LogManager(tmp_path, LogConfig())
    manager.open_all(NOW)
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []
    manager.close()


def test_directory_is_locked(tmp_path: Path) -> None:
    first = LogManager(tmp_path, LogConfig())
    first.open_all(NOW)
    second = LogManager(tmp_path, LogConfig())
    with pytest.raises(KafkaError) as exc:
        second.open_all(NOW)
    assert exc.value.error_code == ErrorCode.kafka_storage_error
    first.close()
    second.open_all(NOW)
    second.close()


def test_flush_due_and_retention(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.open_all(NOW)
    eager = manager.create("eager", 0, LogConfig(flush_messages=1), now_ms=NOW)
    lazy = manager.create("lazy", 0, now_ms=NOW)
    eager.append(make_batch(1), NOW)
    lazy.append(make_batch(1), NOW)
    assert manager.flush_due(NOW) == [eager]
    short = manager.create("short", 0, LogConfig(retention_ms=10), now_ms=NOW)
    short.append(make_batch(1, timestamp=NOW), NOW)
    assert manager.apply_retention(NOW + 1000) == 1
    assert short.log_start_offset == 1
    manager.close()


def test_kill_9_loses_nothing_acknowledged(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from storage_helpers import NOW, make_batch
        from kgroups.partitions.config import LogConfig
        from kgroups.storage.log_manager import LogManager

        manager = LogManager(Path({str(tmp_path)!r}), LogConfig(segment_bytes=2000))
        manager.open_all(NOW)
        plog = manager.create("t", 0, now_ms=NOW)
        for i in range(100):
            plog.append(make_batch(2, value_size=20, compression=i % 5), NOW)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert not (tmp_path / "cleanly_shutdown").exists()
    manager = LogManager(tmp_path, LogConfig(segment_bytes=2000))
    manager.open_all(NOW)  # the lock died with the process
    plog = manager.get("t", 0)
    assert plog is not None and plog.log_end_offset == 200
    assert plog.append(make_batch(1), NOW).base_offset == 200
    manager.close()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5, 31])
def test_failed_topic_creation_leaves_no_partition_and_no_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """EMFILE at any file of any partition: nothing is left, not even a descriptor."""
    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW)
    real_open = os.open
    calls = [0]

    def open_until_emfile(*args: Any, **kwargs: Any) -> int:
        calls[0] += 1
        if calls[0] == fail_at:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(*args, **kwargs)

    before = _open_fds()
    monkeypatch.setattr(os, "open", open_until_emfile)
    with pytest.raises(OSError, match="Too many open files"):
        manager.create_partitions("t", 20, LogConfig(), NOW)
    monkeypatch.setattr(os, "open", real_open)
    assert _open_fds() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("t")]
    assert manager.get("t", 0) is None
    logs = manager.create_partitions("t", 2, LogConfig(), NOW)
    manager.adopt("t", logs)
    assert manager.get("t", 1) is logs[1]
    manager.close()


def test_partitions_of_unregistered_topics_are_set_aside(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW)
    for topic in ("kept", "half-created"):
        manager.create(topic, 0).append(make_batch(2), NOW)
    manager.create("kept", 1)
    manager.close()

    registered = {("kept", 0)}
    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW, registered=lambda topic, p: (topic, p) in registered)
    assert [(t, p) for t, p, _ in manager.logs()] == [("kept", 0)]
    assert manager.get("kept", 0).log_end_offset == 2  # type: ignore[union-attr]
    strays = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith("-stray"))
    assert [s.split(".")[0] for s in strays] == ["half-created-0", "kept-1"]
    # A new topic of the same name starts empty; the stray data is left alone.
    (fresh,) = manager.create_partitions("half-created", 1, LogConfig(), NOW)
    assert fresh.log_end_offset == 0
    fresh.close()
    manager.close()


def test_retention_leaves_unlinking_to_the_caller(tmp_path: Path) -> None:
    """Retired segments are renamed at once and unlinked later, off the loop; a
    restart removes any left over."""
    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW)
    plog = manager.create("t", 0, LogConfig(retention_ms=10, segment_bytes=200), now_ms=NOW)
    for timestamp in (NOW, NOW, NOW + 1000, NOW + 1000):
        plog.append(make_batch(1, timestamp=timestamp), NOW)
    directory = plog.directory
    old = sorted(p.name for p in directory.glob("*.log"))[:-1]
    assert manager.apply_retention(NOW + 1000) == len(old)
    start = plog.log_start_offset
    assert start == 2
    retired = manager.take_retired_files()
    assert sorted(p.name for p in retired if p.name.endswith(".log.deleted")) == [
        name + ".deleted" for name in old
    ]
    assert all(p.exists() for p in retired)
    assert plog.read(plog.log_start_offset, 1 << 20)  # the log reads on meanwhile
    manager.remove_retired_files(retired[:1])
    assert manager.take_retired_files() == []
    manager.close()

    manager = LogManager(tmp_path, LogConfig(), ManualClock(NOW))
    manager.open_all(NOW)
    assert not list(directory.glob("*.deleted"))
    assert manager.get("t", 0).log_start_offset == 2  # type: ignore[union-attr]
    manager.close()
