"""Random schedules of fetches, acknowledgements, lock timeouts, members
leaving and the log start moving on one share partition, on virtual time;
after each step Kafka's rules hold: a record is held by one member at a time, never delivered more
than the delivery count limit, the start offset only moves forward and
nothing before it is in flight, and the counts the metrics read are those
of the records; in the end every record is accepted or archived."""

from __future__ import annotations

import random

import pytest

from kgroups.share_partitions import (
    AcknowledgementBatch,
    AcknowledgeType,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)

RECORDS = 300
BATCH = 7
MEMBERS = ("a", "b", "c")
LIMIT = 3
LOCK_MS = 1000
KINDS = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)


def _log_batches(start: int) -> list[tuple[int, int]]:
    first = start - start % BATCH
    return [(b, min(b + BATCH - 1, RECORDS - 1)) for b in range(first, RECORDS, BATCH)]


@pytest.mark.parametrize("seed", range(20))
def test_random_schedules_keep_the_rules(seed: int) -> None:
    rng = random.Random(seed)
    config = SharePartitionConfig(
        record_lock_duration_ms=LOCK_MS, delivery_count_limit=LIMIT, max_record_locks=100
    )
    sp = SharePartition(config, 0)
    now = 0
    held: dict[str, list[int]] = {m: [] for m in MEMBERS}
    deliveries: dict[int, int] = {}
    previous_start = 0
    for _ in range(3000):
        member = rng.choice(MEMBERS)
        step = rng.random()
        if step < 0.4:
            got = sp.acquire(
                member,
                _log_batches(sp.next_fetch_offset()),
                now,
                rng.randint(1, 30),
                record_limit=rng.random() < 0.5,
            )
            for r in got:
                for offset in range(r.first_offset, r.last_offset + 1):
                    deliveries[offset] = deliveries.get(offset, 0) + 1
                    assert r.delivery_count == deliveries[offset] <= LIMIT
                    for other in MEMBERS:
                        assert offset not in held[other]
                    held[member].append(offset)
        elif step < 0.8 and held[member]:
            offsets = sorted(set(held[member]))
            chosen = offsets[: rng.randint(1, len(offsets))]
            kind = rng.choice(
                (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)
            )
            acks = [AcknowledgementBatch(first, last, (kind,)) for first, last in _runs(chosen)]
            error = sp.acknowledge(member, acks, now)
            if error.value == 0:
                held[member] = [o for o in held[member] if o not in chosen]
            else:  # a lock timed out meanwhile: the member no longer holds some
                held[member] = [o for o in held[member] if _holds(sp, member, o)]
        elif step < 0.9:
            now += rng.randint(1, LOCK_MS)
            sp.expire(now)
        elif step < 0.91:  # retention or DeleteRecords moves the log start
            sp.move_start(min(RECORDS, sp.start_offset + rng.randint(0, 10)))
        else:
            sp.release_member(member)
            held[member] = []
        for m in MEMBERS:
            held[m] = [o for o in held[m] if _holds(sp, m, o)]
        assert sp.start_offset >= previous_start
        previous_start = sp.start_offset
        assert all(b.last >= sp.start_offset for b in sp.batches())
        assert _counted(sp) == _walked(sp)
    # Everyone accepts what it holds, then fetches until nothing is left.
    for _ in range(200):
        for member in MEMBERS:
            got = sp.acquire(member, _log_batches(sp.next_fetch_offset()), now, 50)
            acks = [AcknowledgementBatch(r.first_offset, r.last_offset, (1,)) for r in got]
            acks += [AcknowledgementBatch(o, o, (1,)) for o in held[member]]
            held[member] = []
            assert sp.acknowledge(member, acks, now).value == 0
        if sp.start_offset == RECORDS:
            break
    assert sp.start_offset == RECORDS and sp.batches() == []
    assert _counted(sp) == (0, {}, 0)


def _holds(sp: SharePartition, member: str, offset: int) -> bool:
    record = sp.record(offset)
    return (
        record is not None and record.state is RecordState.ACQUIRED and record.member_id == member
    )


Counts = tuple[int, dict[int, int], int]


def _counted(sp: SharePartition) -> Counts:
    """Acquired records, the same by delivery count, and records done, as kept."""
    t = sp.tally
    return t.acquired, dict(t.acquired_by_delivery), t.delivery_complete


def _walked(sp: SharePartition) -> Counts:
    """The same, from the records themselves."""
    acquired, done = 0, 0
    by_delivery: dict[int, int] = {}
    for batch in sp.batches():
        for first, last, delivery in batch.deliveries():
            size = max(0, last - max(first, sp.start_offset) + 1)
            if size and delivery.state is RecordState.ACQUIRED:
                acquired += size
                count = delivery.delivery_count
                by_delivery[count] = by_delivery.get(count, 0) + size
            elif size and delivery.state.final:
                done += size
    return acquired, by_delivery, done


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Sorted offsets as ranges of consecutive ones: parts of batches, or more."""
    runs: list[tuple[int, int]] = []
    for o in offsets:
        if runs and runs[-1][1] + 1 == o:
            runs[-1] = (runs[-1][0], o)
        else:
            runs.append((o, o))
    return runs
