"""The longest string every protocol version can carry.

A non-flexible string has an int16 length, so it holds at most 32,767 bytes of
UTF-8. A value the broker makes up and then echoes in old versions (a member id
is the client id, a dash and a UUID) is cut to fit, or the first DescribeGroups
v0-v4 of its group would fail to encode.
"""

from __future__ import annotations

MAX_STRING_BYTES = 32767


def fit(value: str, limit: int = MAX_STRING_BYTES) -> str:
    """`value`, or its longest prefix of at most `limit` UTF-8 bytes."""
    if len(value) * 4 <= limit:  # short enough whatever its characters
        return value
    encoded = value.encode()
    if len(encoded) <= limit:
        return value
    return encoded[:limit].decode("utf-8", "ignore")  # drops a cut character
