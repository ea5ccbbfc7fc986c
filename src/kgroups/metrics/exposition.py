"""Prometheus text exposition format (version 0.0.4), written by hand.

A family is announced once (HELP and TYPE lines), then its samples follow;
label values are escaped as the format requires.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def label_text(labels: Iterable[tuple[str, str]]) -> str:
    """``k="v",...`` for ``series``: names as given, values escaped."""
    return ",".join(f'{k}="{_escape(v)}"' for k, v in labels)


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class Exposition:
    """Lines of one scrape, in order."""

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        self._lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self._lines.append(f"# HELP {name} {help_text}")
        self._lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: str | int) -> None:
        if labels:
            inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            self._lines.append(f"{name}{{{inner}}} {_number(value)}")
        else:
            self._lines.append(f"{name} {_number(value)}")

    def series(self, name: str, labels: Iterable[str], values: Iterable[float]) -> None:
        """Samples whose label texts (``k="v",...``, see ``partition_labels``) the
        caller built: the per-partition families, thousands of samples each."""
        self._lines.extend(
            f"{name}{{{text}}} {value if type(value) is int else _number(value)}"
            for text, value in zip(labels, values, strict=True)
        )

    def text(self) -> str:
        self._lines.append("")
        return "\n".join(self._lines)


# Label texts repeat from one scrape to the next; building them is most of a
# scrape's cost, so they are kept (bounded: a few MB at the bound).
@functools.lru_cache(maxsize=100_000)
def partition_labels(topic: str, partition: int) -> str:
    return f'topic="{_escape(topic)}",partition="{partition}"'


@functools.lru_cache(maxsize=100_000)
def group_partition_labels(group: str, topic: str, partition: int) -> str:
    return f'group="{_escape(group)}",topic="{_escape(topic)}",partition="{partition}"'
