"""The CLI against a SASL broker with ACLs on, as a super user named by
--command-config: `kgroups acls add` and `kgroups users add|list|delete
--bootstrap-server` work over the wire, and the users it adds log in."""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import pytest
from acl_wire import STANDARD
from sasl_fixtures import PASSWORDS, sasl_broker

from kgroups.cli import main
from kgroups.client.cluster import ClusterClient
from kgroups.client.exceptions import AuthenticationFailedError
from kgroups.client.security import ClientSecurity

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _properties(path: Path, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Path:
    # Written as Kafka's docs show it: the JAAS line continued over two lines.
    path.write_text(
        "# client.properties\n"
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config={SCRAM} required \\\n"
        f'    username="{user}" password="{password}";\n'
    )
    return path


def _logs_in(bootstrap: str, user: str, password: str, mechanism: str) -> bool:
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{SCRAM} required username="{user}" password="{password}";',
        }
    )

    async def connect() -> bool:
        client = ClusterClient(bootstrap, "test", security)
        try:
            await client.any_connection()
            return True
        except AuthenticationFailedError:
            return False
        finally:
            await client.close()

    return asyncio.run(connect())


def test_a_super_user_manages_acls_and_users_over_sasl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    b = sasl_broker(
        tmp_path / "data",
        **{
            "authorizer.class.name": STANDARD,
            "super.users": "User:bob",
            "allow.everyone.if.no.acl.found": "false",
        },
    ).start()
    admin = _properties(tmp_path / "admin.properties", "bob", PASSWORDS["bob"])
    wire = ["--bootstrap-server", b.bootstrap, "--command-config", str(admin)]
    try:
        assert main(["topics", "create", "orders", "--partitions", "1", *wire]) == 0
        monkeypatch.setattr(sys, "stdin", io.StringIO("k:v\n"))
        assert main(["produce", "orders", "--key-separator", ":", *wire]) == 0
        consume = ["consume", "orders", "--from-beginning", "--print-key", "--max-messages", "1"]
        assert main([*consume, *wire]) == 0
        assert main(["groups", "list", *wire]) == 0
        assert "k\tv" in capsys.readouterr().out
        add = ["users", "add", "carol", "--password", "carol-pw", "--iterations", "8192"]
        assert main([*add, *wire]) == 0
        assert main(["users", "list", *wire]) == 0
        out = capsys.readouterr().out
        assert "carol\tSCRAM-SHA-256 (iterations=8192), SCRAM-SHA-512 (iterations=8192)" in out
        assert "bob\t" in out

        # carol authenticates, but may not read orders until an ACL says so.
        assert _logs_in(b.bootstrap, "carol", "carol-pw", "SCRAM-SHA-256")
        acl = ["acls", "add", "--allow-principal", "User:carol", "--operation", "describe"]
        assert main([*acl, "--topic", "orders", *wire]) == 0
        assert main(["acls", "list", "--topic", "orders", *wire]) == 0
        assert "TOPIC LITERAL orders: User:carol from * ALLOW DESCRIBE" in capsys.readouterr().out

        assert main(["users", "delete", "carol", *wire]) == 0
        assert not _logs_in(b.bootstrap, "carol", "carol-pw", "SCRAM-SHA-256")
        assert main(["users", "delete", "carol", *wire]) == 1  # nothing left to delete

        # Without --command-config the tool cannot even connect; a wrong password is named.
        assert main(["acls", "list", "--bootstrap-server", b.bootstrap]) == 1
        wrong = _properties(tmp_path / "wrong.properties", "bob", "not-bobs")
        assert (
            main(
                ["users", "list", "--bootstrap-server", b.bootstrap, "--command-config", str(wrong)]
            )
            == 1
        )
        assert "authentication failed" in capsys.readouterr().err
    finally:
        b.stop()
