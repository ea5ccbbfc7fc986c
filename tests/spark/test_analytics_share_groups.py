"""`kgroups analytics` on a real share group: kgroups' ShareConsumer reads five
records, accepting two, rejecting one and releasing two; on their second
delivery it accepts one and releases the other, and accepts that one on its
third. The job reads the group's records from
``__consumer_offsets`` and its share partition's state from
``__share_group_state``, as the broker wrote them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import produce
from share_consumers import GROUP, TOPIC, poll_until, share_broker, share_consumer, share_topic

from kgroups.client import AcknowledgeType
from kgroups.errors import ErrorCode

pytestmark = pytest.mark.spark


def test_analytics_on_a_real_share_group(spark: Any, tmp_path: Path) -> None:
    from kgroups.spark.analytics.job import STEPS, AnalyticsConfig, Progress, run_analytics

    broker = share_broker(tmp_path)
    try:
        share_topic(broker, 1)
        records = [b"job-%d" % i for i in range(5)]
        assert produce(broker.port, TOPIC, 0, *records)[0] is ErrorCode.none
        consumer = share_consumer(broker, share_acknowledgement_mode="explicit")
        try:
            kinds = [AcknowledgeType.ACCEPT] * 2 + [AcknowledgeType.REJECT]
            kinds += [AcknowledgeType.RELEASE] * 2
            for record, kind in zip(poll_until(consumer, 5), kinds, strict=True):
                consumer.acknowledge(record, kind)
            consumer.commit_sync(10)
            second = poll_until(consumer, 2)
            assert [(r.offset, r.delivery_count) for r in second] == [(3, 2), (4, 2)]
            consumer.acknowledge(second[0], AcknowledgeType.ACCEPT)
            consumer.acknowledge(second[1], AcknowledgeType.RELEASE)
            consumer.commit_sync(10)
            (third,) = poll_until(consumer, 1)
            assert (third.offset, third.delivery_count) == (4, 3)
            consumer.acknowledge(third, AcknowledgeType.ACCEPT)
            consumer.commit_sync(10)
        finally:
            consumer.close()

        out = str(tmp_path / "share")
        lines: list[str] = []
        summary = run_analytics(
            spark,
            AnalyticsConfig(bootstrap=broker.bootstrap, output=out, groups=GROUP),
            Progress(steps=STEPS, write=lines.append),
        )
    finally:
        broker.stop()
    assert "share_group_epoch" in lines[1] and "unknown" not in lines[1]
    assert summary["share_groups"] == 1
    state = spark.read.parquet(f"{out}/share_state").orderBy("state_offset").collect()
    assert {(r.group, r.topic, r.partition) for r in state} == {(GROUP, TOPIC, 0)}
    # The group coordinator initializes the share partition first, its start
    # not chosen yet (-1): the first fetch chooses it (share.auto.offset.reset).
    assert state[0].start_offset == -1
    state = state[1:]
    starts = [r.start_offset for r in state]
    assert [s for i, s in enumerate(starts) if i == 0 or s != starts[i - 1]] == [0, 3, 4, 5]
    # The start, kept at the share partition's first fetch.
    assert (state[0].start_offset, state[0].completed) == (0, None)
    # After the first acknowledgements: 0..2 done with (the rejected one archived at
    # the head, which leaves no trace), 3 and 4 offered again.
    released = next(r for r in state if r.start_offset == 3)
    assert (released.delivered_not_done, released.in_flight_end, released.completed) == (2, 5, 3)
    # 4 released after its second delivery: seen delivered twice.
    twice = next(r for r in state if r.start_offset == 4)
    assert (twice.redelivered, twice.max_delivery_count, twice.redelivered_seen) == (1, 2, 1)
    last = state[-1]
    assert (last.start_offset, last.in_flight_end, last.delivered_not_done) == (5, 5, 0)
    assert (last.completed_total, last.delivered_seen, last.archived_seen) == (5, 5, 0)

    epochs = spark.read.parquet(f"{out}/share_epochs").orderBy("offsets_offset").collect()
    bumps = [e for e in epochs if e.event == "group_epoch"]
    assert [e.cause.split(":")[0] for e in bumps] == ["group created; joined", "left"]
    assert [e.member_count for e in bumps] == [1, 0]
    assert {tp for e in epochs if e.event == "member_epoch" for tp in e.assigned} == {f"{TOPIC}-0"}

    report = (tmp_path / "share" / "report.html").read_text()
    assert f"<h2>{GROUP} (share group)</h2>" in report
    # jobs-0: start 5, log end 5, lag 0.
    assert "<td>jobs</td><td>0</td><td>5</td><td>5</td><td>0</td>" in report
