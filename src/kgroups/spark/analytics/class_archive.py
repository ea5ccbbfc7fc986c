"""A class-data archive for the driver JVM, so that runs after the first start faster.

Most of the JVM's start-up on a short run is loading and verifying Spark's classes.
The JDK can map them instead from an archive that an earlier run wrote as it exited
(dynamic application class-data sharing, JDK 13 and later). The first run on a
machine asks its JVM to write one (it does so after the job is done, taking some
seconds of CPU in the background); each later run maps it. The archive is kept
under ``$XDG_CACHE_HOME/kgroups`` (``~/.cache/kgroups``), one per PySpark version and
JDK, and ``KGROUPS_SPARK_CLASS_ARCHIVE=off`` turns all of this off.

An archive is written under a name of its own and adopted by a later run once its
header is there: the JDK writes the header last, so a run never maps an archive
half written. A JDK that cannot use an archive (another version, another class
path) ignores it silently: CDS logging is off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

__all__ = ["ARCHIVE_ENV", "archive_options"]

ARCHIVE_ENV = "KGROUPS_SPARK_CLASS_ARCHIVE"
_MAGIC = (0xF00BABA8).to_bytes(4, "little")  # a finished dynamic archive's header
_WRITING_FOR_S = 600  # a younger unfinished archive is probably still being written
_QUIET = "-Xlog:cds=off,cds+dynamic=off"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgroups"


def _archive_name() -> str:
    """One archive per PySpark version and JDK."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME") or os.path.realpath(shutil.which("java") or "java")
    jdk = hashlib.sha256(java_home.encode()).hexdigest()[:12]
    return f"spark-{pyspark.__version__}-{jdk}.jsa"


def _finished(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == _MAGIC
    except OSError:
        return False


def archive_options() -> list[str]:
    """The JVM options mapping the archive, or writing it when there is none yet."""
    if os.environ.get(ARCHIVE_ENV, "").lower() in ("off", "false", "0"):
        return []
    directory = _cache_dir()
    archive = directory / _archive_name()
    if not archive.exists():
        writing = False
        for partial in directory.glob(f"{archive.name}.*.partial"):
            try:
                if _finished(partial):
                    os.replace(partial, archive)
                elif time.time() - partial.stat().st_mtime < _WRITING_FOR_S:
                    writing = True
                else:
                    partial.unlink()  # its JVM died while writing it
            except OSError:
                continue
        if not archive.exists():
            if writing:
                return []
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError:
                return []
            partial = directory / f"{archive.name}.{os.getpid()}.partial"
            return [f"-XX:ArchiveClassesAtExit={partial}", _QUIET]
    return [f"-XX:SharedArchiveFile={archive}", _QUIET]
