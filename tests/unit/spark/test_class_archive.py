"""The driver JVM's class-data archive: written by the first run, mapped by the next,
never mapped half written."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kgroups.spark.analytics.class_archive import ARCHIVE_ENV, archive_options

FINISHED_HEADER = (0xF00BABA8).to_bytes(4, "little")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    return tmp_path / "kgroups"


def _option(options: list[str], name: str) -> Path | None:
    for option in options:
        if option.startswith(f"-XX:{name}="):
            return Path(option.split("=", 1)[1])
    return None


def test_first_run_writes_an_archive_the_next_run_maps(cache: Path) -> None:
    first = archive_options()
    partial = _option(first, "ArchiveClassesAtExit")
    assert partial is not None and partial.parent == cache and cache.is_dir()
    assert "-Xlog:cds=off,cds+dynamic=off" in first  # no CDS warning on the console
    partial.write_bytes(FINISHED_HEADER + b"\0" * 100)  # what the JVM leaves at exit

    second = archive_options()
    archive = _option(second, "SharedArchiveFile")
    assert archive is not None and archive.read_bytes().startswith(FINISHED_HEADER)
    assert not partial.exists()
    assert _option(archive_options(), "SharedArchiveFile") == archive


def test_an_archive_being_written_is_neither_mapped_nor_written_again(cache: Path) -> None:
    partial = _option(archive_options(), "ArchiveClassesAtExit")
    assert partial is not None
    partial.write_bytes(b"\0" * 100)  # the header comes last
    assert archive_options() == []


def test_an_archive_its_jvm_never_finished_is_replaced(cache: Path) -> None:
    partial = _option(archive_options(), "ArchiveClassesAtExit")
    assert partial is not None
    partial.write_bytes(b"\0" * 100)
    an_hour_ago = time.time() - 3600
    os.utime(partial, (an_hour_ago, an_hour_ago))
    assert _option(archive_options(), "ArchiveClassesAtExit") is not None
    assert not partial.exists()


def test_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ARCHIVE_ENV, "off")
    assert archive_options() == []
    assert not cache.exists()
