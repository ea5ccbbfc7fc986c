"""`--command-config FILE`: read as Java reads a .properties file, and a file
that cannot work is a configuration error (exit 2), as a broker's is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroups.cli import main
from kgroups.client.config_schema import ConfigError
from kgroups.commands.command_config import read_properties


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


def _read(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "client.properties"
    path.write_bytes(text.encode())
    return read_properties(path)


def test_unicode_escapes_are_read_in_keys_and_values(tmp_path: Path) -> None:
    props = _read(tmp_path, "sasl.mech\\u0061nism=PL\\u0041IN\npw=caf\\u00e9 \\u2603\n")
    assert props == {"sasl.mechanism": "PLAIN", "pw": "café ☃"}


def test_separators_and_comments_are_those_java_accepts(tmp_path: Path) -> None:
    props = _read(
        tmp_path,
        "! a comment\n"
        "   # an indented comment \\\n"
        "a=1\n"
        "b:2\n"
        "c 3\n"
        "d\t:  4\n"
        "e = = 5\n"
        "f\\:g=6\n"
        "h\\ i 7\n"
        "empty\n"
        "j=two \\\n"
        "   # parts\n"
        "k=trailing  \n"
        "l=\\tx\\y\r\n"
        "m=last",
    )
    assert props == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "= 5",
        "f:g": "6",
        "h i": "7",
        "empty": "",
        "j": "two # parts",
        "k": "trailing  ",
        "l": "\txy",
        "m": "last",
    }


def test_a_malformed_unicode_escape_is_a_configuration_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="uxxxx"):
        _read(tmp_path, "pw=\\u00g1\n")
    code = main(["topics", "list", "--command-config", str(tmp_path / "client.properties")])
    assert code == 2
    assert capsys.readouterr().err.startswith("kgroups: configuration error: ")
