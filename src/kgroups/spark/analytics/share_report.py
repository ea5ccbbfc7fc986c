"""The share groups' part of the HTML report: per share group, each share
partition's start offset over time (how far its records are done with) with
the group's epochs on the same axis, what its stored state says now, and
its epoch history. Inline SVG, as the rest of the page."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgroups.spark.analytics.chart_axes import lag_ticks, time_ticks
from kgroups.spark.analytics.report import EpochMark, epoch_table, when

__all__ = ["ShareGroupReport", "SharePartitionNow", "render_share_groups"]

_WIDTH, _HEIGHT = 900, 220
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 76, 24, 24, 40
_LINES = ("#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457")


@dataclass(frozen=True)
class SharePartitionNow:
    """A share partition's last stored state, and its log end now."""

    topic: str
    partition: int
    start_offset: int
    in_flight: int
    delivered_not_done: int
    acknowledged: int
    archived: int
    completed_total: int
    redelivered_seen: int
    archived_seen: int
    log_end: int | None = None

    @property
    def lag(self) -> int | None:
        """KIP-1226's lag: records from the start offset not yet done with."""
        if self.log_end is None:
            return None
        return max(0, self.log_end - self.start_offset - self.acknowledged - self.archived)


@dataclass
class ShareGroupReport:
    group: str
    partitions: list[SharePartitionNow] = field(default_factory=list)
    starts: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    """(t_ms, start offset) of each share partition, in time order."""
    epochs: list[EpochMark] = field(default_factory=list)

    @property
    def members(self) -> int | None:
        return self.epochs[-1].members if self.epochs else None


def _chart(report: ShareGroupReport, start: int, end: int) -> str:
    span = max(end - start, 1)
    lows = [o for series in report.starts.values() for _, o in series]
    low = min(lows, default=0)
    ticks = lag_ticks(max([o - low for o in lows] + [1]))
    top = ticks[-1]
    left, right, upper, lower = _PAD_LEFT, _WIDTH - _PAD_RIGHT, _PAD_TOP, _HEIGHT - _PAD_BOTTOM

    def x(t: int) -> float:
        return left + (t - start) / span * (right - left)

    def y(offset: int) -> float:
        return lower - (offset - low) / top * (lower - upper)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'role="img" aria-label="start offsets of {html.escape(report.group)}" font-size="11">'
    ]
    for tick in ticks:
        parts.append(
            f'<line x1="{left}" y1="{y(low + tick):.1f}" x2="{right}" y2="{y(low + tick):.1f}" '
            f'stroke="#e4e4e4"/><text class="tick-y" x="{left - 6}" y="{y(low + tick) + 4:.1f}" '
            f'text-anchor="end">{low + tick:,}</text>'
        )
    for t, label in time_ticks(start, end):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{lower}" x2="{x(t):.1f}" y2="{lower + 4}" stroke="#888"/>'
            f'<text class="tick-x" x="{x(t):.1f}" y="{lower + 16}" text-anchor="middle">'
            f"{label}</text>"
        )
    for mark in report.epochs:
        if mark.event != "group_epoch":
            continue
        tip = f"group epoch {mark.epoch} at {when(mark.t_ms)}: {html.escape(mark.cause)}"
        parts.append(
            f'<g class="epoch"><title>{tip} ({mark.members} members)</title>'
            f'<line x1="{x(mark.t_ms):.1f}" y1="{upper}" x2="{x(mark.t_ms):.1f}" y2="{lower}" '
            'stroke="#00897b" stroke-dasharray="6,3"/></g>'
        )
    for i, ((topic, partition), series) in enumerate(sorted(report.starts.items())):
        colour = _LINES[i % len(_LINES)]
        # A step line: the start offset holds until the next stored state.
        points: list[str] = []
        for j, (t, offset) in enumerate(series):
            if j:
                points.append(f"{x(t):.1f},{y(series[j - 1][1]):.1f}")
            points.append(f"{x(t):.1f},{y(offset):.1f}")
        name = html.escape(f"{topic}-{partition}")
        t_last, o_last = series[-1]
        parts.append(
            f'<g class="share-partition"><title>{name}</title>'
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{" ".join(points)}"/>'
            f'<text x="{x(t_last) - 4:.1f}" y="{y(o_last) - 4:.1f}" text-anchor="end" '
            f'fill="{colour}">{name}</text></g>'
        )
    parts.append(
        f'<text x="{right}" y="{_HEIGHT - 4}" text-anchor="end" fill="#666">time (UTC)</text></svg>'
    )
    return "".join(parts)


def _cell(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def render_share_groups(reports: Sequence[ShareGroupReport]) -> str:
    """The share groups' sections of the page ('' when there is none)."""
    if not reports:
        return ""
    times = [t for r in reports for series in r.starts.values() for t, _ in series]
    times += [e.t_ms for r in reports for e in r.epochs]
    start, end = (min(times), max(times)) if times else (0, 1)
    summary = "".join(
        f"<tr><td>{html.escape(r.group)}</td><td>{_cell(r.members)}</td>"
        f"<td>{len(r.partitions)}</td>"
        f"<td>{_cell(sum(p.completed_total for p in r.partitions))}</td>"
        f"<td>{_cell(sum(p.delivered_not_done for p in r.partitions))}</td>"
        f"<td>{_cell(sum(p.redelivered_seen for p in r.partitions))}</td>"
        f"<td>{_cell(sum(p.archived_seen for p in r.partitions))}</td></tr>"
        for r in reports
    )
    sections = []
    for r in reports:
        rows = "".join(
            f"<tr><td>{html.escape(p.topic)}</td><td>{p.partition}</td>"
            f"<td>{_cell(p.start_offset)}</td><td>{_cell(p.log_end)}</td><td>{_cell(p.lag)}</td>"
            f"<td>{_cell(p.in_flight)}</td><td>{_cell(p.delivered_not_done)}</td>"
            f"<td>{_cell(p.acknowledged)}</td><td>{_cell(p.archived)}</td>"
            f"<td>{_cell(p.completed_total)}</td><td>{_cell(p.redelivered_seen)}</td>"
            f"<td>{_cell(p.archived_seen)}</td></tr>"
            for p in r.partitions
        )
        sections.append(
            f'<section class="share-group"><h2>{html.escape(r.group)} (share group)</h2>'
            "<p>Start offset of each share partition over time (every record before it is "
            "done with) and the group epochs (dashed; hover for who joined or left).</p>"
            f"{_chart(r, start, end)}"
            "<h3>Share partitions now</h3><table><tr><th>topic</th><th>partition</th>"
            "<th>start offset</th><th>log end</th><th>lag</th><th>in flight</th>"
            "<th>delivered, not done</th><th>acknowledged</th><th>archived</th>"
            "<th>done with (total)</th><th>redelivered (seen)</th><th>archived (seen)</th>"
            f"</tr>{rows}</table>" + (epoch_table(r.epochs) if r.epochs else "") + "</section>"
        )
    return (
        "<h2>Share groups</h2><p>From <code>__share_group_state</code> (each share partition's "
        "stored delivery state) and the share groups' records. 'Seen' counts are at least "
        "what happened: a record acquired and acknowledged between two stored states leaves "
        "no trace but the start offset's move.</p>"
        "<table><tr><th>group</th><th>members</th><th>share partitions</th>"
        "<th>done with</th><th>delivered, not done</th><th>redelivered (seen)</th>"
        f"<th>archived (seen)</th></tr>{summary}</table>{''.join(sections)}"
    )
