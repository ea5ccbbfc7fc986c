"""ISO-8601 durations as Java's ``Duration.parse`` reads them
(``PnDTnHnMn.nS``: days, hours, minutes and seconds, each optional, signed
parts allowed), for ``share.auto.offset.reset=by_duration:<duration>``."""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """Milliseconds; ValueError when ``text`` is not such a duration."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or not any(m.group(i) for i in (2, 3, 4, 5)):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    sign, days, hours, minutes, seconds, fraction = m.groups()
    ms = (
        int(days or 0) * 86_400_000
        + int(hours or 0) * 3_600_000
        + int(minutes or 0) * 60_000
        + int(seconds or 0) * 1000
    )
    if fraction:
        part = int(fraction.ljust(9, "0")) // 1_000_000
        ms += -part if (seconds or "").startswith("-") else part
    return -ms if sign == "-" else ms
