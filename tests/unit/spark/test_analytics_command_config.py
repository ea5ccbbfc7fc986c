"""`kgroups analytics --command-config FILE` takes the other tools' security
properties, checked before Spark (and its JVM) starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroups.cli import main


def test_a_command_config_that_cannot_work_fails_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    args = ["analytics", "--output", str(tmp_path / "out"), "--command-config", str(properties)]
    assert main(args) == 2
    assert "sasl.mechanism GSSAPI (Kerberos, the Java default) is not supported" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()
