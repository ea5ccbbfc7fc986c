"""docs/packages.dot, the picture at the top of docs/architecture.md, is drawn
from the imports as they are (regenerate it with ``python docs/packages.py``)."""

from __future__ import annotations

import runpy
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_package_picture_matches_the_imports() -> None:
    drawn = runpy.run_path(str(DOCS / "packages.py"))["dot"]()
    assert (DOCS / "packages.dot").read_text() == drawn, (
        "the imports changed: run `python docs/packages.py > docs/packages.dot` "
        "and `dot -Tsvg docs/packages.dot -o docs/packages.svg`"
    )


def test_the_seam_is_drawn() -> None:
    assert '"partitions" [label="partitions\\nthe seam' in (DOCS / "packages.dot").read_text()
