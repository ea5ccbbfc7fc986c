"""docs/security.md's examples, one per listener type and one of authorization,
run as written: each block marked `<!-- example: NAME -->` in order, shell
commands through bash (`kgroups serve` as a broker this test stops), properties
blocks as the file their first line names, Python blocks as scripts whose output
must be what their `print(...)  # ...` comments say. Ports 9092 and 9093 become
free ports, /tmp/kafka-logs a temporary directory."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgroups.testing.defaults import broker_properties
from kgroups.testing.process_broker import free_port

from certificates import Authority

pytestmark = pytest.mark.interop

DOC = Path(__file__).parents[2] / "docs" / "security.md"
MARKED = re.compile(r"<!-- example: ([\w-]+) -->\n```(\w+)\n(.*?)```", re.S)
EXAMPLES: dict[str, list[tuple[str, str]]] = {}
for _name, _language, _code in MARKED.findall(DOC.read_text()):
    EXAMPLES.setdefault(_name, []).append((_language, _code))

DOC_PORTS = ("9092", "9093")
DOC_DATA = "/tmp/kafka-logs"
EXPECTED = re.compile(r"^print\(.*\)  # (.*)$", re.M)


def commands(script: str) -> list[str]:
    """The shell commands of a block, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", script)
    lines = (line.strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


class DocRun:
    """One example's working directory, ports, data and broker."""

    def __init__(self, directory: Path) -> None:
        self.cwd = directory
        self.data = directory / "kafka-logs"
        self.ports = {doc: str(free_port()) for doc in DOC_PORTS}
        self.broker: subprocess.Popen[bytes] | None = None
        self.broker_log = directory / "broker.log"
        # `kgroups` on PATH is this interpreter's kgroups, wherever the suite runs.
        bin_dir = directory / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "kgroups"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kgroups "$@"\n')
        shim.chmod(0o755)
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def local(self, text: str) -> str:
        for doc, port in self.ports.items():
            text = re.sub(rf"\b{doc}\b", port, text)
        return text.replace(DOC_DATA, str(self.data))

    def shell(self, command: str) -> None:
        command = self.local(command)
        if command.startswith("kgroups serve"):
            self.serve(command)
            return
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"

    def serve(self, command: str) -> None:
        assert self.broker is None, "one broker per example"
        # The test broker's data directory and its two quick-start settings.
        quick = broker_properties(self.data, 0, {})
        del quick["listeners"]
        command += "".join(f" --override {key}={value}" for key, value in quick.items())
        with open(self.broker_log, "ab") as log:
            self.broker = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        ports = [p for p in self.ports.values() if re.search(rf":{p}\b", command)]
        assert ports, command
        deadline = time.monotonic() + 30
        for port in ports:
            while True:
                assert self.broker.poll() is None, self.broker_log.read_text()[-2000:]
                assert time.monotonic() < deadline, "broker did not start listening"
                try:
                    socket.create_connection(("127.0.0.1", int(port)), 0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)

    def write_file(self, properties: str) -> None:
        first, _, body = properties.partition("\n")
        assert first.startswith("# "), "a properties block starts with its file name"
        (self.cwd / first[2:].strip()).write_text(self.local(body))

    def python(self, code: str) -> None:
        (self.cwd / "example.py").write_text(self.local(code))
        result = subprocess.run(
            [sys.executable, "example.py"],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert result.stdout.splitlines() == EXPECTED.findall(code)

    def run(self, blocks: list[tuple[str, str]], skip: int = 0) -> None:
        """Every block in order; the first ``skip`` shell commands are left out."""
        for language, code in blocks:
            if language == "sh":
                for command in commands(code):
                    if skip:
                        skip -= 1
                    else:
                        self.shell(command)
            elif language == "properties":
                self.write_file(code)
            elif language == "python":
                self.python(code)
            else:
                raise AssertionError(f"no runner for {language} blocks")

    def stop(self) -> None:
        if self.broker is not None and self.broker.poll() is None:
            self.broker.terminate()
            try:
                self.broker.wait(15)
            except subprocess.TimeoutExpired:
                self.broker.kill()
                self.broker.wait(10)


@pytest.fixture
def doc_run(tmp_path: Path) -> Iterator[DocRun]:
    run = DocRun(tmp_path)
    try:
        yield run
    finally:
        run.stop()


def certificate_commands() -> list[str]:
    """The SSL example's commands that make ca.crt and server.pem: those before
    the broker starts."""
    sh = next(commands(code) for language, code in EXAMPLES["ssl"] if language == "sh")
    serve = next(i for i, c in enumerate(sh) if c.startswith("kgroups serve"))
    return sh[:serve]


def make_certificates(run: DocRun, openssl: bool) -> None:
    """ca.crt and server.pem, by the SSL example's openssl commands or as the
    same files from a CA made in Python."""
    if openssl:
        for command in certificate_commands():
            run.shell(command)
        return
    authority = Authority(run.cwd / "authority", "Example CA")
    server = authority.server()
    shutil.copy(authority.cert, run.cwd / "ca.crt")
    shutil.copy(server.both, run.cwd / "server.pem")


def test_doc_has_an_example_per_listener_type() -> None:
    assert set(EXAMPLES) == {"plaintext", "ssl", "sasl-plaintext", "sasl-ssl", "authorization"}
    for name, blocks in EXAMPLES.items():
        languages = [language for language, _ in blocks]
        assert "sh" in languages and languages[-1] == "python", name
        assert any(c.startswith("kgroups serve") for c in commands(blocks[0][1])), name
    assert {"ca.crt", "server.pem"} <= set(" ".join(certificate_commands()).split())


@pytest.mark.parametrize("name", ["plaintext", "sasl-plaintext", "authorization"])
def test_doc_example_runs(name: str, doc_run: DocRun) -> None:
    doc_run.run(EXAMPLES[name])


def test_authorization_example_refuses_what_alice_was_not_granted() -> None:
    python = EXAMPLES["authorization"][-1][1]
    assert EXPECTED.findall(python) == ["b'order 1'", "TOPIC_AUTHORIZATION_FAILED"]


def test_ssl_example_runs(doc_run: DocRun) -> None:
    from confluent_kafka import Consumer

    # Where openssl is missing the rest of the example still runs.
    make_certificates(doc_run, openssl=shutil.which("openssl") is not None)
    doc_run.run(EXAMPLES["ssl"], skip=len(certificate_commands()))
    # What the example produced over TLS reads back on the PLAINTEXT listener.
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{doc_run.ports['9092']}",
            "group.id": "check",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["orders"])
        message = consumer.poll(30)
    finally:
        consumer.close()
    assert message is not None and message.error() is None
    assert message.value() == b"over TLS"


def test_sasl_ssl_example_runs_with_the_ssl_examples_certificates(doc_run: DocRun) -> None:
    # Certificates made in Python here, so that path runs wherever openssl is.
    make_certificates(doc_run, openssl=False)
    doc_run.run(EXAMPLES["sasl-ssl"])
