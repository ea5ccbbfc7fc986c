"""The HTML report in a real browser (Debian's chromium, headless, driven by
Playwright): charts with round time and lag ticks and rebalance markers labelled
with their generation, laid out without overlaps, and no page errors. Structure
is compared, not pixels."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.spark.analytics.chart_axes import lag_ticks, time_ticks
from kgroups.spark.analytics.report import EpochMark, GroupReport, render_report

CHROMIUM = "/usr/bin/chromium"
T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
SECOND = 1000


def test_time_ticks_are_round_and_dated_once_a_day() -> None:
    ticks = time_ticks(T0, T0 + 100 * SECOND)
    assert [t - T0 for t, _ in ticks] == [s * SECOND for s in (10, 25, 40, 55, 70, 85, 100)]
    assert [label for _, label in ticks] == [
        "11-14 22:13:30",
        *("22:13:45", "22:14:00", "22:14:15", "22:14:30", "22:14:45", "22:15:00"),
    ]
    labels = [label for _, label in time_ticks(T0, T0 + 20 * 3600 * SECOND)]
    assert labels == ["11-15 00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00"]


def test_lag_ticks_step_by_one_two_or_five() -> None:
    assert lag_ticks(0) == [0, 1]
    assert lag_ticks(7) == [0, 2, 4, 6, 8]
    assert lag_ticks(108) == [0, 50, 100, 150]
    assert lag_ticks(5400) == [0, 2000, 4000, 6000]


def _reports() -> list[GroupReport]:
    slow = GroupReport("slow", "WARN", 108, max_lag_seconds=44.5)
    slow.lag_series = [(T0 + 10 * SECOND * j, 12 * j, "WARN") for j in range(10)]
    slow.rebalances = [
        (T0 + at * SECOND, generation, cause, 2, 1500)
        for generation, at, cause in (
            (1, 1, "group created; joined: a-1"),
            (2, 3, "joined: b-1"),  # close to generation 1: its label goes on the next row
            (3, 20, "left or expired: b-1"),
            (4, 30, "joined: c-1"),
            (5, 50, "left: a-1"),
            (6, 60, "left: c-1"),
        )
    ]
    steady = GroupReport("steady <&>", "OK", 0)
    steady.lag_series = [(T0 + 10 * SECOND * j, 0, "OK") for j in range(10)]
    return [slow, steady]


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no {CHROMIUM} (make test installs Debian's chromium package)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser.new_page(viewport={"width": 1000, "height": 800})
        finally:
            browser.close()


_BOXES = """svg => [...svg.querySelectorAll(SELECTOR)].map(e => {
    const r = e.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return {text: e.textContent, x: r.x - s.x, y: r.y - s.y, w: r.width, h: r.height,
            sw: s.width, sh: s.height};
})"""


def _boxes(svg: Any, selector: str) -> list[dict[str, Any]]:
    boxes: list[dict[str, Any]] = svg.evaluate(_BOXES.replace("SELECTOR", repr(selector)))
    return boxes


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def test_report_charts_render_with_readable_axes(page: Any, tmp_path: Path) -> None:
    reports = _reports()
    path = tmp_path / "report.html"
    path.write_text(render_report(reports, T0 + 100 * SECOND, "Consumer groups"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: errors.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(path.as_uri())

    charts = page.query_selector_all("svg")
    assert len(charts) == 2
    start, end = T0, T0 + 90 * SECOND
    expected_times = [label for _, label in time_ticks(start, end)]
    for report, chart in zip(reports, charts, strict=True):
        times = _boxes(chart, "text.tick-x")
        lags = _boxes(chart, "text.tick-y")
        labels = _boxes(chart, "text.rebalance-label")
        assert [b["text"] for b in times] == expected_times and len(times) >= 4
        top = max(lag for _, lag, _ in report.lag_series)
        assert [b["text"] for b in lags] == [f"{n:,}" for n in lag_ticks(top)]
        assert [b["text"] for b in labels] == [f"g{r[1]}" for r in report.rebalances]
        assert len(chart.query_selector_all("g.rebalance line")) == len(report.rebalances)
        texts = times + lags + labels
        for i, a in enumerate(texts):
            assert a["w"] > 0 and a["h"] > 0, a
            assert a["x"] >= 0 and a["x"] + a["w"] <= a["sw"], a
            assert a["y"] >= 0 and a["y"] + a["h"] <= a["sh"], a
            assert not any(_overlap(a, b) for b in texts[i + 1 :]), a
    shot = page.screenshot(full_page=True)
    (tmp_path / "report.png").write_bytes(shot)
    width, height = int.from_bytes(shot[16:20], "big"), int.from_bytes(shot[20:24], "big")
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and width == 1000 and height > 2 * 240
    assert errors == []


def test_consumer_group_epochs_are_drawn_without_overlapping_labels(
    page: Any, tmp_path: Path
) -> None:
    report = GroupReport("kip848", "OK", 0)
    report.lag_series = [(T0 + 10 * SECOND * j, 3 * j, "OK") for j in range(10)]
    for epoch, at in ((1, 1), (2, 2), (3, 3), (4, 40), (5, 41)):
        t = T0 + at * SECOND
        report.epochs += [
            EpochMark(t, "group_epoch", epoch, f"joined: m{epoch}", epoch, 500),
            EpochMark(t, "assignment_epoch", epoch, "new target", epoch),
            EpochMark(t + 300, "member_epoch", epoch, f"m{epoch}: epoch {epoch}", epoch),
        ]
    path = tmp_path / "report.html"
    path.write_text(render_report([report], T0 + 100 * SECOND, "Consumer groups"))
    page.goto(path.as_uri())
    [chart] = page.query_selector_all("svg")
    labels = _boxes(chart, "text.epoch-label")
    # e3 comes too soon after e1 and e2 for a label of its own.
    assert [b["text"] for b in labels] == ["e1", "e2", "e4", "e5"]
    assert len(chart.query_selector_all("g.epoch line")) == 10
    assert len(chart.query_selector_all("g.reconciliation line")) == 5
    texts = labels + _boxes(chart, "text.tick-x") + _boxes(chart, "text.tick-y")
    for i, a in enumerate(texts):
        assert a["y"] >= 0 and a["x"] >= 0 and a["x"] + a["w"] <= a["sw"], a
        assert not any(_overlap(a, b) for b in texts[i + 1 :]), a
