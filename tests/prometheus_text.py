"""Scrape a Prometheus text endpoint and read its samples, for tests."""

from __future__ import annotations

import re
import urllib.request

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Key = tuple[str, frozenset[tuple[str, str]]]


class Scrape:
    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: dict[Key, float] = {}
        self.types: dict[str, str] = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
                continue
            if not line or line.startswith("#"):
                continue
            m = _SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            labels = frozenset(_LABEL.findall(m.group(2) or ""))
            self.samples[m.group(1), labels] = float(m.group(3))

    def value(self, name: str, **labels: str | int) -> float:
        key = (name, frozenset((k, str(v)) for k, v in labels.items()))
        return self.samples[key]

    def get(self, name: str, default: float = 0.0, **labels: str | int) -> float:
        key = (name, frozenset((k, str(v)) for k, v in labels.items()))
        return self.samples.get(key, default)


def scrape(port: int, path: str = "/metrics") -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return Scrape(response.read().decode())
