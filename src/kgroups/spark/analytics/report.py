"""The self-contained HTML report: lag over time per group with its rebalances
on the same time axis, and the current status table.

Charts are inline SVG and styles are inline CSS: no script, no font, nothing
fetched, so the file reads the same offline, attached to a ticket or archived.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = ["GroupReport", "render_report"]

_COLOURS = {
    "OK": "#2e7d32",
    "WARN": "#f9a825",
    "ERR": "#c62828",
    "STOP": "#6a1b9a",
    "STALL": "#ad1457",
    "REWIND": "#1565c0",
}
_WIDTH, _HEIGHT, _PAD = 900, 220, 48


@dataclass
class GroupReport:
    group: str
    status: str
    total_lag: int
    lag_series: list[tuple[int, int, str]] = field(default_factory=list)
    """(t_ms, total lag in offsets, group status) at each evaluation time."""
    rebalances: list[tuple[int, int, str, int, int | None]] = field(default_factory=list)
    """(t_ms, generation, cause, members, not_stable_ms)."""
    partitions: list[tuple[str, int, int | None, int | None, int, str]] = field(
        default_factory=list
    )
    """(topic, partition, committed, log end, lag, status) now."""
    max_lag_seconds: float | None = None


def _when(t_ms: int) -> str:
    return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _chart(report: GroupReport, start: int, end: int) -> str:
    span = max(end - start, 1)
    top = max([lag for _, lag, _ in report.lag_series] + [1])

    def x(t: int) -> float:
        return _PAD + (t - start) / span * (_WIDTH - 2 * _PAD)

    def y(lag: int) -> float:
        return _HEIGHT - _PAD + -lag / top * (_HEIGHT - 2 * _PAD)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'role="img" aria-label="lag of {html.escape(report.group)}">',
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" '
        'stroke="#888"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_HEIGHT - _PAD}" stroke="#888"/>',
        f'<text x="4" y="{_PAD + 4}" font-size="11">{top}</text>',
        f'<text x="4" y="{_HEIGHT - _PAD}" font-size="11">0</text>',
        f'<text x="{_PAD}" y="{_HEIGHT - 8}" font-size="11">{_when(start)}</text>',
        f'<text x="{_WIDTH - _PAD}" y="{_HEIGHT - 8}" font-size="11" text-anchor="end">'
        f"{_when(end)}</text>",
    ]
    for t, generation, cause, members, _ in report.rebalances:
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{_PAD - 10}" x2="{x(t):.1f}" y2="{_HEIGHT - _PAD}" '
            f'stroke="#999" stroke-dasharray="3,3"><title>generation {generation} at '
            f"{_when(t)}: {html.escape(cause)} ({members} members)</title></line>"
        )
        parts.append(
            f'<circle cx="{x(t):.1f}" cy="{_PAD - 10}" r="4" fill="#555"><title>generation '
            f"{generation}: {html.escape(cause)}</title></circle>"
        )
    points = " ".join(f"{x(t):.1f},{y(lag):.1f}" for t, lag, _ in report.lag_series)
    if points:
        parts.append(f'<polyline fill="none" stroke="#1565c0" stroke-width="2" points="{points}"/>')
    for t, lag, status in report.lag_series:
        colour = _COLOURS.get(status, "#000")
        parts.append(
            f'<circle cx="{x(t):.1f}" cy="{y(lag):.1f}" r="2.5" fill="{colour}">'
            f"<title>{_when(t)}: lag {lag}, {status}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _badge(status: str) -> str:
    colour = _COLOURS.get(status, "#000")
    return (
        f'<span style="background:{colour};color:#fff;padding:1px 6px;border-radius:3px">'
        f"{html.escape(status)}</span>"
    )


def render_report(groups: Sequence[GroupReport], generated_ms: int, title: str) -> str:
    times = [t for g in groups for t, _, _ in g.lag_series] + [
        t for g in groups for t, *_ in g.rebalances
    ]
    start, end = (min(times), max(times)) if times else (generated_ms, generated_ms)
    rows = "".join(
        f"<tr><td>{html.escape(g.group)}</td><td>{_badge(g.status)}</td><td>{g.total_lag}</td>"
        f"<td>{'' if g.max_lag_seconds is None else f'{g.max_lag_seconds:.1f}'}</td>"
        f"<td>{len(g.rebalances)}</td></tr>"
        for g in groups
    )
    sections = []
    for g in groups:
        partition_rows = "".join(
            f"<tr><td>{html.escape(topic)}</td><td>{partition}</td>"
            f"<td>{'' if committed is None else committed}</td>"
            f"<td>{'' if end_offset is None else end_offset}</td><td>{lag}</td>"
            f"<td>{_badge(status)}</td></tr>"
            for topic, partition, committed, end_offset, lag, status in g.partitions
        )
        rebalance_rows = "".join(
            f"<tr><td>{_when(t)}</td><td>{generation}</td><td>{members}</td>"
            f"<td>{'' if unstable is None else f'{unstable / 1000:.1f} s'}</td>"
            f"<td>{html.escape(cause)}</td></tr>"
            for t, generation, cause, members, unstable in g.rebalances
        )
        sections.append(
            f"<section><h2>{html.escape(g.group)} {_badge(g.status)}</h2>"
            f"<p>Total lag over time (offsets; dots coloured by status) and rebalances "
            f"(dashed lines; hover for details).</p>{_chart(g, start, end)}"
            "<h3>Partitions now</h3><table><tr><th>topic</th><th>partition</th>"
            "<th>committed</th><th>log end</th><th>lag</th><th>status</th></tr>"
            f"{partition_rows}</table>"
            f"<h3>Rebalances ({len(g.rebalances)})</h3><table><tr><th>time (UTC)</th>"
            "<th>generation</th><th>members</th><th>not Stable</th><th>cause</th></tr>"
            f"{rebalance_rows}</table></section>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:24px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}"
        "section{margin-top:32px}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Generated {_when(generated_ms)} UTC; "
        f"history from {_when(start)} to {_when(end)}.</p>"
        "<h2>Current status</h2><table><tr><th>group</th><th>status</th><th>lag (offsets)</th>"
        f"<th>max lag (s)</th><th>rebalances</th></tr>{rows}</table>"
        f"{''.join(sections)}</body></html>"
    )
