"""Small values every handler needs."""

from __future__ import annotations

from datetime import timedelta

from kio.static.primitive import i32Timedelta

from kgroups.protocol.types import i32

NO_THROTTLE = i32Timedelta.parse(timedelta(0))
# Kafka's "authorized operations not requested" marker.
OPERATIONS_OMITTED = i32(-2147483648)
