"""The self-contained HTML report: lag over time per group with its rebalances
(classic groups) or epoch moves (consumer groups) on the same time axis, and
the current status table.

Charts are inline SVG and styles are inline CSS: no script, no font, nothing
fetched, so the file reads the same offline, attached to a ticket or archived.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kgroups.spark.analytics.chart_axes import lag_ticks, time_ticks

__all__ = ["EpochMark", "GroupReport", "epoch_table", "render_report", "when"]

_COLOURS = {
    "OK": "#2e7d32",
    "WARN": "#f9a825",
    "ERR": "#c62828",
    "STOP": "#6a1b9a",
    "STALL": "#ad1457",
    "REWIND": "#1565c0",
}
_WIDTH, _HEIGHT = 900, 240
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 76, 24, 40, 40
_LABEL_GAP = 30  # pixels between rebalance labels on one row
_LABEL_ROW = 14  # pixels between the two rows of labels: more than a label is high


@dataclass(frozen=True)
class EpochMark:
    """One row of the ``epochs`` table: a consumer group's epoch move."""

    t_ms: int
    event: str
    """group_epoch, assignment_epoch, member_epoch, regex_resolved, group_deleted."""
    epoch: int | None
    cause: str
    members: int
    reconciled_ms: int | None = None


# How group-wide epoch events are drawn: (colour, dash pattern, label prefix or
# None). A target assignment follows its group epoch at once: only the group epoch
# is labelled, so labels stay apart. Other events (a member's reconciliation
# step) are ticks on the time axis.
_EPOCH_STYLE: dict[str, tuple[str, str, str | None]] = {
    "group_epoch": ("#00897b", "6,3", "e"),
    "assignment_epoch": ("#8d6e63", "1,3", None),
    "group_deleted": ("#999", "3,3", None),
}


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
    epochs: list[EpochMark] = field(default_factory=list)
    """A consumer group's epoch moves, in log order."""

    @property
    def group_epochs(self) -> list[EpochMark]:
        return [e for e in self.epochs if e.event == "group_epoch"]


def when(t_ms: int) -> str:
    """A time of the report: UTC, to the second."""
    return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _chart(report: GroupReport, start: int, end: int) -> str:
    span = max(end - start, 1)
    lags = lag_ticks(max([lag for _, lag, _ in report.lag_series] + [1]))
    top = lags[-1]
    left, right, upper, lower = _PAD_LEFT, _WIDTH - _PAD_RIGHT, _PAD_TOP, _HEIGHT - _PAD_BOTTOM

    def x(t: int) -> float:
        return left + (t - start) / span * (right - left)

    def y(lag: int) -> float:
        return lower - lag / top * (lower - upper)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'role="img" aria-label="lag of {html.escape(report.group)}" font-size="11">',
        '<g class="y-axis">',
    ]
    for lag in lags:
        parts.append(
            f'<line x1="{left}" y1="{y(lag):.1f}" x2="{right}" y2="{y(lag):.1f}" '
            f'stroke="{"#888" if lag == 0 else "#e4e4e4"}"/>'
            f'<text class="tick-y" x="{left - 6}" y="{y(lag) + 4:.1f}" text-anchor="end">'
            f"{lag:,}</text>"
        )
    parts.append(
        f'<text x="12" y="{(upper + lower) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {(upper + lower) / 2:.1f})">lag (offsets)</text></g>'
        '<g class="x-axis">'
    )
    for t, label in time_ticks(start, end):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{lower}" x2="{x(t):.1f}" y2="{lower + 4}" stroke="#888"/>'
            f'<text class="tick-x" x="{x(t):.1f}" y="{lower + 16}" text-anchor="middle">'
            f"{label}</text>"
        )
    parts.append(
        f'<text x="{right}" y="{_HEIGHT - 4}" text-anchor="end" fill="#666">time (UTC)</text></g>'
    )
    rows_end = [-1e9, -1e9]  # where the last label of each of two rows ends
    for t, generation, cause, members, _ in report.rebalances:
        row = 0 if x(t) - rows_end[0] >= _LABEL_GAP else 1
        rows_end[row] = x(t)
        tip = f"generation {generation} at {when(t)}: {html.escape(cause)} ({members} members)"
        parts.append(
            f'<g class="rebalance"><title>{tip}</title>'
            f'<line x1="{x(t):.1f}" y1="{upper - 4}" x2="{x(t):.1f}" y2="{lower}" '
            'stroke="#999" stroke-dasharray="3,3"/>'
            f'<text class="rebalance-label" x="{x(t):.1f}" y="{upper - 8 - _LABEL_ROW * row}" '
            f'text-anchor="middle" fill="#555">g{generation}</text></g>'
        )
    for mark in report.epochs:
        tip = f"{html.escape(mark.event.replace('_', ' '))} at {when(mark.t_ms)}: " + html.escape(
            mark.cause
        )
        style = _EPOCH_STYLE.get(mark.event)
        if style is None:  # a member's reconciliation step: a tick on the time axis
            parts.append(
                f'<g class="reconciliation"><title>{tip}</title>'
                f'<line x1="{x(mark.t_ms):.1f}" y1="{lower - 6}" x2="{x(mark.t_ms):.1f}" '
                f'y2="{lower}" stroke="#00897b" stroke-width="2"/></g>'
            )
            continue
        colour, dashes, prefix = style
        label = ""
        # Epochs come in bursts (members starting together): a label goes on the
        # first row with room, or is left out (the line's tooltip still tells).
        free = [row for row in (0, 1) if x(mark.t_ms) - rows_end[row] >= _LABEL_GAP]
        if prefix is not None and free:
            row = free[0]
            rows_end[row] = x(mark.t_ms)
            label = (
                f'<text class="epoch-label" x="{x(mark.t_ms):.1f}" '
                f'y="{upper - 8 - _LABEL_ROW * row}" '
                f'text-anchor="middle" fill="{colour}">{prefix}{mark.epoch}</text>'
            )
        parts.append(
            f'<g class="epoch"><title>{tip} ({mark.members} members)</title>'
            f'<line x1="{x(mark.t_ms):.1f}" y1="{upper - 4}" x2="{x(mark.t_ms):.1f}" y2="{lower}" '
            f'stroke="{colour}" stroke-dasharray="{dashes}"/>{label}</g>'
        )
    points = " ".join(f"{x(t):.1f},{y(lag):.1f}" for t, lag, _ in report.lag_series)
    if points:
        parts.append(f'<polyline fill="none" stroke="#1565c0" stroke-width="2" points="{points}"/>')
    for t, lag, status in report.lag_series:
        colour = _COLOURS.get(status, "#000")
        parts.append(
            f'<circle cx="{x(t):.1f}" cy="{y(lag):.1f}" r="2.5" fill="{colour}">'
            f"<title>{when(t)}: lag {lag}, {status}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _badge(status: str) -> str:
    colour = _COLOURS.get(status, "#000")
    return (
        f'<span style="background:{colour};color:#fff;padding:1px 6px;border-radius:3px">'
        f"{html.escape(status)}</span>"
    )


def epoch_table(epochs: Sequence[EpochMark]) -> str:
    rows = "".join(
        f"<tr><td>{when(e.t_ms)}</td><td>{html.escape(e.event.replace('_', ' '))}</td>"
        f"<td>{'' if e.epoch is None else e.epoch}</td><td>{e.members}</td>"
        f"<td>{'' if e.reconciled_ms is None else f'{e.reconciled_ms / 1000:.1f} s'}</td>"
        f"<td>{html.escape(e.cause)}</td></tr>"
        for e in epochs
    )
    return (
        f"<h3>Epochs ({len(epochs)})</h3><table><tr><th>time (UTC)</th><th>event</th>"
        "<th>epoch</th><th>members</th><th>reconciled in</th><th>cause</th></tr>"
        f"{rows}</table>"
    )


def render_report(
    groups: Sequence[GroupReport], generated_ms: int, title: str, appendix: str = ""
) -> str:
    """The page; ``appendix``: more sections after the groups' (share groups)."""
    times = (
        [t for g in groups for t, _, _ in g.lag_series]
        + [t for g in groups for t, *_ in g.rebalances]
        + [e.t_ms for g in groups for e in g.epochs]
    )
    start, end = (min(times), max(times)) if times else (generated_ms, generated_ms)
    rows = "".join(
        f"<tr><td>{html.escape(g.group)}</td><td>{_badge(g.status)}</td><td>{g.total_lag}</td>"
        f"<td>{'' if g.max_lag_seconds is None else f'{g.max_lag_seconds:.1f}'}</td>"
        f"<td>{len(g.rebalances) + len(g.group_epochs)}</td></tr>"
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
            f"<tr><td>{when(t)}</td><td>{generation}</td><td>{members}</td>"
            f"<td>{'' if unstable is None else f'{unstable / 1000:.1f} s'}</td>"
            f"<td>{html.escape(cause)}</td></tr>"
            for t, generation, cause, members, unstable in g.rebalances
        )
        sections.append(
            f"<section><h2>{html.escape(g.group)} {_badge(g.status)}</h2>"
            + (
                "<p>Total lag over time (offsets; dots coloured by status) and epochs (consumer "
                "group: dashed lines labelled with the group epoch, dotted for target "
                "assignments, ticks on the time axis for members' reconciliation steps; "
                "hover for the cause).</p>"
                if g.epochs
                else "<p>Total lag over time (offsets; dots coloured by status) and rebalances "
                "(dashed lines labelled with their generation; hover for the cause).</p>"
            )
            + f"{_chart(g, start, end)}"
            "<h3>Partitions now</h3><table><tr><th>topic</th><th>partition</th>"
            "<th>committed</th><th>log end</th><th>lag</th><th>status</th></tr>"
            f"{partition_rows}</table>"
            + (
                f"<h3>Rebalances ({len(g.rebalances)})</h3><table><tr><th>time (UTC)</th>"
                "<th>generation</th><th>members</th><th>not Stable</th><th>cause</th></tr>"
                f"{rebalance_rows}</table>"
                if g.rebalances or not g.epochs
                else ""
            )
            + (epoch_table(g.epochs) if g.epochs else "")
            + "</section>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:24px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}"
        "section{margin-top:32px}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Generated {when(generated_ms)} UTC; "
        f"history from {when(start)} to {when(end)}.</p>"
        "<h2>Current status</h2><table><tr><th>group</th><th>status</th><th>lag (offsets)</th>"
        f"<th>max lag (s)</th><th>rebalances</th></tr>{rows}</table>"
        f"{''.join(sections)}{appendix}</body></html>"
    )
