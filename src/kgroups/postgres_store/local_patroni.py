"""A throwaway highly available store on loopback: etcd, and PostgreSQL servers
managed by Patroni, with synchronous replication.

For tests and ``kgroups dev-cluster --ha``: Debian's ``postgresql``,
``patroni`` and ``etcd-server`` packages (``make store-ha`` installs them).
One etcd member, ``nodes`` Patroni members (the one that initializes the
cluster is the primary, the others stream from it); every port ephemeral on 127.0.0.1,
everything in one temporary directory, removed by ``stop()``.

Patroni runs in ``synchronous_mode`` (PostgreSQL's ``synchronous_commit=on``
with a synchronous standby Patroni picks): a commit is acknowledged once it
is flushed on the standby too, and Patroni only promotes that standby. It
also runs with ``primary_start_timeout: 0``: a primary whose PostgreSQL dies
is not restarted in place, the standby takes over within a ``loop_wait`` or
two. The loop timings are small, for tests (see docs/cluster.md for
production ones).

PostgreSQL refuses to run as root: as root, Patroni, and with it
PostgreSQL, runs as the ``postgres`` system user (Debian's package creates
it; created with ``useradd`` if missing); otherwise as the user running this.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SCOPE = "kgroups"
SUPERUSER = "postgres"
SERVER_USER = "postgres"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Timings:
    """Patroni's loop (seconds): the leader key's ``ttl``, the ``loop_wait``
    between turns, and ``retry_timeout`` for etcd and PostgreSQL operations.
    Patroni needs ``loop_wait + 2 * retry_timeout <= ttl``."""

    ttl: int = 10
    loop_wait: int = 1
    retry_timeout: int = 3


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    port: int  # PostgreSQL
    api_port: int  # Patroni's REST API
    data: Path


class LocalPatroni:
    """``start()``, then ``url(database)``; ``stop()`` always (also after a failed start)."""

    def __init__(self, nodes: int = 2, *, fsync: bool = True, timings: Timings = Timings()) -> None:
        if nodes < 2:
            raise ValueError("a highly available store needs at least two PostgreSQL nodes")
        if timings.loop_wait + 2 * timings.retry_timeout > timings.ttl:
            raise ValueError("Patroni needs loop_wait + 2 * retry_timeout <= ttl")
        self.timings = timings
        self._count = nodes
        self._fsync = fsync
        self._dir: Path | None = None
        self.nodes: list[Node] = []
        self._etcd: subprocess.Popen[bytes] | None = None
        self._etcd_port = 0
        self._patroni: dict[str, subprocess.Popen[bytes]] = {}

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> LocalPatroni:
        binaries = _binaries()
        user = _server_user()
        self._dir = Path(tempfile.mkdtemp(prefix="kgroups-ha-"))
        os.chmod(self._dir, 0o755)
        self._start_etcd(binaries["etcd"], user)
        for i in range(1, self._count + 1):
            node_dir = self._dir / f"pg{i}"
            node_dir.mkdir()
            self.nodes.append(Node(f"pg{i}", _free_port(), _free_port(), node_dir / "data"))
            if user is not None:
                os.chown(node_dir, user.pw_uid, user.pw_gid)
        # All at once: one wins the race to initialize the cluster, the others
        # wait for it and copy it.
        for node in self.nodes:
            self._start_patroni(node, binaries, user)
        self._wait(lambda: self.primary() is not None, "no primary")
        self._wait(self._replicated, "the standbys did not catch up")
        return self

    def stop(self) -> None:
        for process in self._patroni.values():  # all at once: none takes over from another
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name in list(self._patroni):
            self.stop_node(name, signalled=True)
        etcd, self._etcd = self._etcd, None
        if etcd is not None:
            _end(etcd)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def reaper_args(self) -> list[str]:
        """What ``commands.dev_cluster_reaper`` must end if its starter dies:
        Patroni first (it would restart its PostgreSQL), etcd, the servers."""
        args: list[str] = []
        for process in [*self._patroni.values(), self._etcd]:
            if process is not None:
                args += ["--kill", str(process.pid)]
        for node in self.nodes:
            args += ["--postgres", str(node.data)]
        if self._dir is not None:
            args += ["--remove", str(self._dir)]
        return args

    def stop_node(self, name: str, *, signalled: bool = False) -> None:
        """Stop one member: Patroni stops its PostgreSQL (fast shutdown) on SIGTERM."""
        process = self._patroni.pop(name, None)
        if process is not None:
            _end(process, signalled=signalled)
        node = self.node(name)
        pid = self.postmaster_pid(node)
        if pid is not None:  # left behind by a Patroni that did not stop it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> LocalPatroni:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what users of the store need ------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        """libpq's multi-host form: the first node that accepts writes."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"postgresql://{SUPERUSER}@{hosts}/{database}?target_session_attrs=read-write"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    @property
    def etcd_address(self) -> str:
        return f"127.0.0.1:{self._etcd_port}"

    @property
    def etcd_pid(self) -> int | None:
        return None if self._etcd is None else self._etcd.pid

    def patroni_pid(self, name: str) -> int | None:
        process = self._patroni.get(name)
        return None if process is None else process.pid

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def primary(self) -> Node | None:
        """The member whose PostgreSQL runs as the primary, as Patroni says."""
        for node in self.nodes:
            if _status(node.api_port, "primary") == 200:
                return node
        return None

    def synchronous_standby(self) -> Node | None:
        for node in self.nodes:
            if _status(node.api_port, "sync") == 200:
                return node
        return None

    def failover(self, timeout_s: float = START_TIMEOUT_S) -> float:
        """Kill the primary's PostgreSQL (SIGKILL) and wait until another node
        takes writes; the seconds that took. Waits first for a synchronous
        standby (after a failover, the old primary comes back as one)."""
        self._wait(lambda: self.synchronous_standby() is not None, "no standby", timeout_s)
        primary = self.primary()
        pid = None if primary is None else self.postmaster_pid(primary)
        if primary is None or pid is None:
            raise RuntimeError("no primary to fail over from")
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        self._wait(
            lambda: (self.primary() or primary) != primary and self._writable(),
            "no standby took over",
            timeout_s,
        )
        return time.monotonic() - killed

    def postmaster_pid(self, node: Node) -> int | None:
        """The pid of the node's PostgreSQL, while its postmaster.pid is there."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((node.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
            return pid
        return None

    def log_text(self, name: str) -> str:
        if self._dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self._dir / name / "patroni.log").read_text(errors="replace")
        return ""

    # -- starting ------------------------------------------------------------------

    def _start_etcd(self, etcd: str, user: pwd.struct_passwd | None) -> None:
        assert self._dir is not None
        data = self._dir / "etcd"
        data.mkdir(mode=0o700)
        if user is not None:
            os.chown(data, user.pw_uid, user.pw_gid)
        self._etcd_port, peer = _free_port(), _free_port()
        client, peer_url = f"http://127.0.0.1:{self._etcd_port}", f"http://127.0.0.1:{peer}"
        self._etcd = _spawn(
            [
                etcd,
                "--name=kgroups",
                f"--data-dir={data}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=kgroups={peer_url}",
            ],
            self._dir / "etcd.log",
            user,
        )

        def healthy() -> bool:
            assert self._etcd is not None
            if self._etcd.poll() is not None:
                raise RuntimeError(f"etcd exited on start; see {self._dir}/etcd.log")
            return _status(self._etcd_port, "health") == 200

        self._wait(healthy, "etcd did not start")

    def _start_patroni(
        self, node: Node, binaries: dict[str, str], user: pwd.struct_passwd | None
    ) -> None:
        config = node.data.parent / "patroni.json"
        # JSON is YAML: Patroni reads it as its configuration file.
        config.write_text(json.dumps(self._config(node, binaries["postgres"]), indent=1))
        if user is not None:
            os.chown(config, user.pw_uid, user.pw_gid)
        self._patroni[node.name] = _spawn(
            [binaries["patroni"], str(config)], node.data.parent / "patroni.log", user
        )

    def _config(self, node: Node, bin_dir: str) -> dict[str, object]:
        t = self.timings
        return {
            "scope": SCOPE,
            "namespace": "/kgroups/",
            "name": node.name,
            "restapi": {
                "listen": f"127.0.0.1:{node.api_port}",
                "connect_address": f"127.0.0.1:{node.api_port}",
            },
            "etcd3": {"hosts": [f"127.0.0.1:{self._etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": t.ttl,
                    "loop_wait": t.loop_wait,
                    "retry_timeout": t.retry_timeout,
                    "maximum_lag_on_failover": 1 << 20,
                    # Commits wait for a standby's flush; only that standby is promoted.
                    "synchronous_mode": True,
                    # With no standby left, the primary commits alone (see docs/cluster.md).
                    "synchronous_mode_strict": False,
                    # A primary whose PostgreSQL died fails over instead of restarting.
                    "primary_start_timeout": 0,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "synchronous_commit": "on",
                            "wal_log_hints": "on",
                            "max_connections": 100,
                            "fsync": "on" if self._fsync else "off",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"auth": "trust"}],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{node.port}",
                "connect_address": f"127.0.0.1:{node.port}",
                "data_dir": str(node.data),
                "bin_dir": bin_dir,
                "pgpass": str(node.data.parent / "pgpass"),
                "authentication": {
                    "superuser": {"username": SUPERUSER},
                    "replication": {"username": "replicator"},
                },
                # Loopback only, for a throwaway cluster: no passwords.
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
                "parameters": {"unix_socket_directories": str(node.data.parent)},
            },
        }

    def _replicated(self) -> bool:
        """Every member runs, and one standby is the synchronous one."""
        running = sum(_status(n.api_port, "health") == 200 for n in self.nodes)
        return running == len(self.nodes) and self.synchronous_standby() is not None

    def _writable(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url(), autocommit=True, connect_timeout=2) as conn:
                conn.execute("CREATE TEMPORARY TABLE probe (x int)")
            return True
        except psycopg.Error:
            return False

    def _wait(self, ready: object, what: str, timeout_s: float = START_TIMEOUT_S) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout_s
        while not ready():
            for name, process in self._patroni.items():
                if process.poll() is not None:
                    raise RuntimeError(f"Patroni {name} exited:\n{self.log_text(name)[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} within {timeout_s:.0f} s; see {self._dir}")
            time.sleep(0.1)


def available() -> str | None:
    """Why a local Patroni cluster cannot start here, or None if it can."""
    try:
        _binaries()
    except RuntimeError as e:
        return str(e)
    return None


def _binaries() -> dict[str, str]:
    patroni, etcd = shutil.which("patroni"), shutil.which("etcd")
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    found = {"patroni": patroni, "etcd-server": etcd, "postgresql": versions}
    missing = [package for package, there in found.items() if not there]
    if missing or patroni is None or etcd is None:
        raise RuntimeError(
            f"a local highly available store needs the Debian packages {', '.join(missing)} "
            "(make store-ha installs them)"
        )
    return {"patroni": patroni, "etcd": etcd, "postgres": str(versions[-1].parent)}


def _server_user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVER_USER], check=True)
        return pwd.getpwnam(SERVER_USER)


def _spawn(
    args: list[str], log_path: Path, user: pwd.struct_passwd | None
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = str(log_path.parent)
    with log_path.open("wb") as log:
        if user is not None:
            os.chown(log_path, user.pw_uid, user.pw_gid)
        return subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=log_path.parent,
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
            start_new_session=True,  # Ctrl-C reaches the parent, which stops it in order
        )


def _end(process: subprocess.Popen[bytes], *, signalled: bool = False) -> None:
    if process.poll() is None:
        if not signalled:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _status(port: int, path: str) -> int:
    """The HTTP status of GET /path on a loopback port; 0 if nothing answered."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (OSError, ValueError):
        return 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
