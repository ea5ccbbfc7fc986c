"""Prometheus text exposition format (version 0.0.4), written by hand.

A family is announced once (HELP and TYPE lines), then its samples follow;
label values are escaped as the format requires.
"""

from __future__ import annotations

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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

    def labelled(self, name: str, labels: str, value: float) -> None:
        """A sample whose label text ``k="v",...`` the caller built (and escaped):
        for the per-partition families, where it is built once per scrape."""
        self._lines.append(f"{name}{{{labels}}} {_number(value)}")

    def text(self) -> str:
        self._lines.append("")
        return "\n".join(self._lines)


def label_text(**labels: str | int) -> str:
    return ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
