"""docs/testing.md's examples run as written: plain Python blocks as scripts,
blocks that start with `# test_*.py` as a pytest file of their own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_doc_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index: int, tmp_path: Path) -> None:
    pytest.importorskip("confluent_kafka")
    code = BLOCKS[index]
    first = code.splitlines()[0]
    if re.fullmatch(r"# test_\w+\.py", first):
        (tmp_path / first[2:]).write_text(code)
        (tmp_path / "pytest.ini").write_text("[pytest]\n")
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    else:
        (tmp_path / "example.py").write_text(code)
        args = [sys.executable, "example.py"]
    result = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
