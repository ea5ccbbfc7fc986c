"""Record 15 (ShareGroupStatePartitionMetadata) as Kafka 4.x lays it out,
and the group coordinator's bookkeeping of which partitions' share state it
initialized."""

from __future__ import annotations

import uuid

from kgroups.coordinator.share.records import StatePartitions, TopicPartitions

TOPIC = uuid.UUID(int=3)


def test_the_value_round_trips_in_kafkas_layout() -> None:
    value = StatePartitions(
        initializing=(TopicPartitions(TOPIC, "t", (2,), 17),),
        initialized=(TopicPartitions(TOPIC, "t", (0, 1), 5),),
        deleting=((uuid.UUID(int=4), "gone"),),
    )
    raw = value.encode()
    assert raw[:2] == b"\x00\x00"  # value version 0
    # initializing: one topic (compact array length 2), its uuid, name "t".
    assert raw[2] == 2 and raw[3:19] == TOPIC.bytes and raw[19:21] == b"\x02t"
    assert StatePartitions.decode(raw) == value
    assert StatePartitions.decode(None) == StatePartitions()
