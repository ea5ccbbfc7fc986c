"""ISO-8601 durations as Java's Duration.parse reads them, for
share.auto.offset.reset=by_duration:."""

from __future__ import annotations

import pytest

from kgroups.config.iso_durations import parse_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1D", 86_400_000),
        ("P1DT2H3M4.5S", 86_400_000 + 2 * 3_600_000 + 3 * 60_000 + 4_500),
        ("PT0.001S", 1),
        ("pt15m", 900_000),
        ("-PT1H", -3_600_000),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "PT1X", "P1W"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration_ms(text)
