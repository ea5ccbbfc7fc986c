"""Lengths a message cannot hold are refused before kio reads (and allocates) them."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription

from kgroups.protocol import apis
from kgroups.protocol.bounds import BadLength, checker

from kio_samples import encode, nullable_paths, sample

# Values a length field can be pushed to: uvarint 0xFFFFFFFF and 2**35-1,
# int32 0x7FFFFFFF, int16 0x7FFF, and -2 in both widths.
EXTREMES = (
    b"\xff\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x7f",
    b"\x7f\xff\xff\xff",
    b"\x7f\xff",
    b"\xff\xfe",
    b"\xff\xff\xff\xfe",
)


def _served() -> Iterator[tuple[int, int]]:
    for key, r in apis.SUPPORTED.items():
        for version in range(r.min_version, r.max_version + 1):
            yield key, version


def _samples(entity_type: type[Any]) -> Iterator[bytes]:
    for path in [(), *nullable_paths(entity_type)]:
        yield encode(sample(entity_type, path))


def test_a_compact_array_of_four_billion_elements_is_refused() -> None:
    # Metadata v12 topics claims 0xFFFFFFFF - 1 elements in 8 bytes.
    codec = apis.codec(apis.METADATA, 12)
    header = struct.pack(">hhih", 3, 12, 1, -1) + b"\x00"
    request = header + b"\xff\xff\xff\xff\x0f\x00\x00\x00"
    with pytest.raises(BadLength, match="4294967294 elements"):
        codec.read_request(request, len(header))


def test_null_where_the_schema_allows_none_is_refused() -> None:
    # OffsetFetch v8: groups (not nullable) as a null compact array.
    codec = apis.codec(apis.OFFSET_FETCH, 8)
    with pytest.raises(BadLength, match="non-nullable field groups was serialized as null"):
        codec.read_request(b"\x00\x00\x00", 0)
    # Metadata v1: topics may be null (all topics).
    assert apis.codec(apis.METADATA, 1).read_request(b"\xff\xff\xff\xff", 0)[0].topics is None


@pytest.mark.parametrize(("api_key", "version"), list(_served()))
def test_every_request_kio_writes_passes_the_check(api_key: int, version: int) -> None:
    codec = apis.codec(api_key, version)
    for body in _samples(codec.request_type):
        codec.read_request(body, 0)


@pytest.mark.parametrize(("api_key", "version"), list(_served()))
def test_lengths_pushed_to_extremes_never_reach_kio(api_key: int, version: int) -> None:
    """Each extreme written over every offset of a valid request: the check
    refuses it, or kio reads it without asking for more than the frame holds
    (a hole would abort this process)."""
    codec = apis.codec(api_key, version)
    for body in _samples(codec.request_type):
        for extreme in EXTREMES:
            for at in range(len(body)):
                for mutated in (
                    body[:at] + extreme + body[at + len(extreme) :],
                    body[:at] + extreme + body[at:],
                ):
                    _check_then_read(codec, mutated)
        for cut in range(len(body)):
            _check_then_read(codec, body[:cut])


def _check_then_read(codec: apis.ApiCodec, body: bytes) -> None:
    with contextlib.suppress(Exception):  # BadLength, or kio's own errors
        codec.read_request(body, 0)


@pytest.mark.parametrize("entity_type", [ConsumerProtocolSubscription, ConsumerProtocolAssignment])
def test_consumer_protocol_metadata_is_checked_too(entity_type: type[Any]) -> None:
    check = checker(entity_type)
    body = encode(sample(entity_type))
    check(body, 0)
    # The first field is an int32-counted array: claim 2**31 - 1 elements.
    with pytest.raises(BadLength):
        check(b"\x7f\xff\xff\xff" + body[4:], 0)


def test_fixed_size_fields_are_one_step() -> None:
    from kgroups.protocol.bounds import _plan

    # OffsetCommit v9 partition: index, offset, leader epoch (16 bytes), then
    # the metadata string and the tagged fields.
    partition = apis.codec(apis.OFFSET_COMMIT, 9).request_type.__dataclass_fields__["topics"]
    plan = _plan(partition.type.__args__[0].__dataclass_fields__["partitions"].type.__args__[0])
    assert plan[0] == (0, 16) and len(plan) == 3
