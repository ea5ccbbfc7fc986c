"""`--command-config FILE`: read as Java reads a .properties file, and a file
that cannot work is a configuration error (exit 2), as a broker's is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroups.cli import main


@pytest.mark.parametrize(
    "text",
    [
        "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n",
        "ssl.protocl=TLSv1.3\n",
    ],
)
def test_a_bad_command_config_is_a_configuration_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "client.properties"
    path.write_text(text)
    code = main(
        ["topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(path)]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith("kgroups: configuration error: ")
