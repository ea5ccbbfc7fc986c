"""Which pending coordinator writes a reply waits for."""

from __future__ import annotations

import asyncio

from kgroups.coordinator.consumer.records import (
    GROUP_METADATA,
    MEMBER_METADATA,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    RegularExpressionKey,
    encode_record,
)
from kgroups.coordinator.records import encode_group_metadata_key, encode_offset_commit_key
from kgroups.protocol import apis
from kgroups.runtime.pending_writes import (
    EVERYTHING,
    MEMBERS,
    OFFSETS,
    PendingWrites,
    request_reach,
    written,
)


def test_records_name_the_state_they_store() -> None:
    records = [
        (encode_offset_commit_key("g-é", "t", 0), b""),
        (encode_group_metadata_key("h"), None),
    ]
    assert written(records) == {("g-é", OFFSETS), ("h", MEMBERS)}


def test_consumer_group_records_store_membership() -> None:
    records = [
        encode_record(GroupKey(GROUP_METADATA, "c"), GroupMetadataValue(1)),
        encode_record(MemberKey(MEMBER_METADATA, "d", "m"), None),
        encode_record(RegularExpressionKey("e", "t.*"), None),
    ]
    assert written(records) == {("c", MEMBERS), ("d", MEMBERS), ("e", MEMBERS)}
    assert request_reach("c", apis.CONSUMER_GROUP_HEARTBEAT) == (("c", MEMBERS),)


def test_a_heartbeat_waits_for_its_groups_membership_only() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        pending = PendingWrites()
        commit, sync, other = loop.create_future(), loop.create_future(), loop.create_future()
        pending.add([("g", OFFSETS)], commit)
        pending.add([("g", MEMBERS)], sync)
        pending.add([("h", MEMBERS)], other)
        assert pending.before(request_reach("g", apis.HEARTBEAT)) == [sync]
        assert pending.before(request_reach("g", apis.OFFSET_FETCH)) == [sync, commit]
        assert len(pending.before(EVERYTHING)) == 3
        pending.settled([("g", MEMBERS)], sync)
        assert pending.before(request_reach("g", apis.HEARTBEAT)) == []
        pending.settled([("g", OFFSETS)], other)  # not its writer: kept
        assert pending.before(request_reach("g", apis.OFFSET_COMMIT)) == [commit]

    asyncio.run(scenario())
