"""docs/apis.md lists exactly the APIs and versions the broker serves."""

from __future__ import annotations

import re
from pathlib import Path

from kgroups.protocol import apis

DOC = Path(__file__).parents[3] / "docs" / "apis.md"


def test_the_api_table_is_the_served_one() -> None:
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)\u2013(\d+) \|$", DOC.read_text(), re.MULTILINE)
    listed = {int(key): (name, int(low), int(high)) for name, key, low, high in rows}
    served = {r.key: (r.name, r.min_version, r.max_version) for r in apis.SUPPORTED.values()}
    assert listed == served
