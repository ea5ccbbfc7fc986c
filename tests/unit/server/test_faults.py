"""The fault registry: what it answers while faults are set, and that it is
inactive (the request path's only check) once none is."""

from __future__ import annotations

import asyncio

import pytest

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.runtime.faults import Faults
from kgroups.topics.placement import OFFSETS_TOPIC


def test_inactive_until_a_fault_is_set_and_after_clear() -> None:
    faults = Faults()
    assert not faults.active
    faults.pause_partition("t", 0)
    assert faults.active
    faults.resume_partition("t", 0)
    assert not faults.active
    faults.coordinator_error()
    faults.delay("Fetch", 5)
    faults.fail_appends("t")
    assert faults.active
    faults.clear()
    assert not faults.active
    assert faults.coordinator_error_for("g") is None


def test_a_groups_own_error_wins_over_the_one_for_every_group() -> None:
    faults = Faults()
    faults.coordinator_error(error="COORDINATOR_NOT_AVAILABLE")
    faults.coordinator_error("g", "coordinator_load_in_progress")
    assert faults.coordinator_error_for("g") is ErrorCode.coordinator_load_in_progress
    assert faults.coordinator_error_for("h") is ErrorCode.coordinator_not_available


def test_appends_fail_for_the_topic_or_for_all() -> None:
    faults = Faults()
    faults.fail_appends("t", "NOT_ENOUGH_REPLICAS")
    assert faults.append_error_for("t") is ErrorCode.not_enough_replicas
    assert faults.append_error_for(OFFSETS_TOPIC) is None
    faults.fail_appends()
    assert faults.append_error_for(OFFSETS_TOPIC) is ErrorCode.kafka_storage_error


def test_drop_counts_down_then_answers_again() -> None:
    faults = Faults()
    faults.drop("Produce", count=2)

    async def answers() -> list[bytes | None]:
        return [await faults.answer(apis.PRODUCE, b"answer") for _ in range(3)]

    assert asyncio.run(answers()) == [None, None, b"answer"]
    assert not faults.active


def test_names_are_checked() -> None:
    faults = Faults()
    with pytest.raises(ValueError, match="not a coordinator error"):
        faults.coordinator_error(error="KAFKA_STORAGE_ERROR")
    with pytest.raises(ValueError, match="unknown API"):
        faults.drop("Frobnicate")
    with pytest.raises(ValueError, match="unknown Kafka error"):
        faults.fail_appends(error="DISK_ON_FIRE")
    assert not faults.active


def test_clear_sends_delayed_answers_at_once() -> None:
    faults = Faults()
    faults.delay("Fetch", ms=60_000)

    async def delayed_then_cleared() -> bytes | None:
        answer = asyncio.create_task(faults.answer(apis.FETCH, b"answer"))
        await asyncio.sleep(0.05)
        assert not answer.done()
        faults.clear()
        return await asyncio.wait_for(answer, 5)

    assert asyncio.run(delayed_then_cleared()) == b"answer"
