"""Our reading of kio's entity classes agrees with kio's wire format.

kgroups reads kio's generated dataclasses itself (protocol/kio_schema.py)
instead of kio's private introspection. Should a kio release change how its
classes describe fields, these tests fail here, loudly, rather than the
version upgrades or the length checks going quietly wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.serial import entity_reader

from kgroups.protocol import apis
from kgroups.protocol.kio_schema import schema_fields

from kio_samples import encode, nullable_paths, sample


def _served_entities() -> Iterator[type[Any]]:
    for key, r in apis.SUPPORTED.items():
        for version in range(r.min_version, r.max_version + 1):
            codec = apis.codec(key, version)
            yield codec.request_type
            yield codec.response_type


def _with_nested(entity_type: type[Any]) -> Iterator[type[Any]]:
    yield entity_type
    for f in schema_fields(entity_type):
        if f.entity is not None:
            yield from _with_nested(f.entity)


def _by_name(entities: set[type[Any]]) -> list[type[Any]]:
    return sorted(entities, key=lambda e: (e.__module__, e.__qualname__))


_MESSAGES = _by_name(set(_served_entities()))
_ENTITIES = _by_name({e for top in _MESSAGES for e in _with_nested(top)})


def test_a_request_reads_as_its_schema_says() -> None:
    fields = {f.name: f for f in schema_fields(JoinGroupRequest)}
    assert list(fields) == [f.name for f in dataclasses.fields(JoinGroupRequest)]
    protocols = fields["protocols"]
    assert protocols.array and protocols.entity is JoinGroupRequestProtocol
    assert not protocols.optional and protocols.kafka_type is None
    assert fields["group_instance_id"].optional
    assert fields["group_instance_id"].kafka_type == "string"
    assert fields["session_timeout"].kafka_type == "timedelta_i32"
    assert not fields["group_id"].optional and fields["group_id"].tag is None


def test_tagged_fields_are_found() -> None:
    tags = {f.name: f.tag for f in schema_fields(ApiVersionsResponse) if f.tag is not None}
    assert tags == {
        "supported_features": 0,
        "finalized_features_epoch": 1,
        "finalized_features": 2,
        "zk_migration_ready": 3,
    }


def test_every_served_entity_is_understood() -> None:
    assert len(_ENTITIES) > 200
    for entity in _ENTITIES:
        for f in schema_fields(entity):
            assert (f.entity is None) != (f.kafka_type is None), (entity, f.name)


@pytest.mark.parametrize("entity", _MESSAGES, ids=lambda e: e.__module__)
def test_a_message_built_from_our_reading_survives_kios_writer_and_reader(
    entity: type[Any],
) -> None:
    read = entity_reader(entity)
    for null_at in [(), *nullable_paths(entity)]:
        value = sample(entity, null_at)
        decoded, end = read(encode(value), 0)
        assert decoded == value
        assert end == len(encode(value))
