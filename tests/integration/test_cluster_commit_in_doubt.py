"""An append whose COMMIT reached the store but whose answer never came back:
the broker cannot know whether it committed, answers with an error (never an
acknowledgement), and settles the outcome from the store before the partition
takes another write. Nothing acknowledged is lost, a retry of the batch in
doubt is a duplicate and not a second write, and the offsets carry on with no
gap.

One broker reaches PostgreSQL through a proxy that loses the answer to the
COMMIT of the writer's next transaction (see commit_cut_proxy). In the held
case the COMMIT reaches the server only after the broker has connected again
and read the partition back: it must not build on what it read then.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from cluster_brokers import (
    cluster_broker,
    create_topic,
    fetch,
    leaders,
    produce,
    produce_batch,
    wait_for,
)
from commit_cut_proxy import CommitCutProxy
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, ProducerId, i16
from kgroups.records.batch import encode_batch

from group_requests import commit_request
from raw_wire import call_once

# The writer's transactions, and only they, insert batches.
APPEND = b"INSERT INTO kgroups_batches"
RETRIABLE = {ErrorCode.kafka_storage_error, ErrorCode.not_leader_or_follower}


def _through(proxy: CommitCutProxy, url: str) -> str:
    """``url`` by way of the proxy, without TLS (the proxy reads the messages)."""
    parts = urlsplit(url)
    user = parts.netloc.rsplit("@", 1)[0]
    netloc = f"{user}@127.0.0.1:{proxy.port}"
    query = "&".join(q for q in (parts.query, "sslmode=disable&gssencmode=disable") if q)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _producer_id(port: int) -> int:
    response = call_once(
        port,
        InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        ),
        timeout=20,
    )
    assert response.error_code == ErrorCode.none
    return int(response.producer_id)


def _settled(
    port: int, batch: bytes, answers: list[tuple[ErrorCode, int]] | None = None
) -> tuple[ErrorCode, int]:
    """Retry ``batch`` as a client does until it is answered without an error;
    every answer is added to ``answers``."""
    answers = [] if answers is None else answers

    def acknowledged() -> bool:
        answers.append(produce_batch(port, "t", 0, batch))
        return answers[-1][0] == ErrorCode.none

    try:
        wait_for(acknowledged, 20)
    except AssertionError:
        raise AssertionError(f"never acknowledged; the last answers: {answers[-3:]}") from None
    return answers[-1]


@pytest.mark.parametrize("hold_s", [0.0, 0.5], ids=["answer-lost", "commit-held"])
def test_an_append_in_doubt_is_settled_before_the_partition_takes_more(
    tmp_path: Path, store_url: str, hold_s: float
) -> None:
    store = urlsplit(store_url)
    with CommitCutProxy(store.hostname or "127.0.0.1", store.port or 5432) as proxy:
        broker = cluster_broker(tmp_path, _through(proxy, store_url), 1)
        try:
            broker.start()
            assert create_topic(broker.port, "t", 1) == ErrorCode.none
            leaders(broker.port, "t")
            pid = _producer_id(broker.port)
            now = int(time.time() * 1000)

            def batch(sequence: int, value: bytes) -> bytes:
                records = [(None, value, (), now)]
                return encode_batch(
                    records, producer_id=pid, producer_epoch=0, base_sequence=sequence
                )

            assert _settled(broker.port, batch(0, b"a")) == (ErrorCode.none, 0)

            # An idempotent producer's batch in doubt. Its next batch, sent
            # before the retry (as a client with batches in flight does), is
            # next in sequence: the batch in doubt is in the store. While the
            # broker cannot tell, it answers a retriable error; never "out of
            # order", which a client cannot get over.
            proxy.cut_after_commit(APPEND, hold_s=hold_s)
            in_doubt = produce_batch(broker.port, "t", 0, batch(1, b"b"))
            assert proxy.fired.wait(10)
            # Not acknowledged without an answer to COMMIT, and not said to be
            # unwritten either: REQUEST_TIMED_OUT, as Kafka answers a write not
            # confirmed in time, which clients take as "possibly written" and
            # retry as it is (librdkafka would reuse the sequence numbers of a
            # batch told NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR).
            assert in_doubt[0] == ErrorCode.request_timed_out, in_doubt
            answers: list[tuple[ErrorCode, int]] = []
            assert _settled(broker.port, batch(2, b"c"), answers) == (ErrorCode.none, 2)
            assert proxy.committed is True
            assert {error for error, _offset in answers} <= RETRIABLE | {ErrorCode.none}
            # The retry of the batch in doubt is a duplicate, with its offset.
            assert _settled(broker.port, batch(1, b"b")) == (ErrorCode.none, 1)

            # A plain produce in doubt, not retried: in the log once, and the
            # next one right after it.
            proxy.cut_after_commit(APPEND, hold_s=hold_s)
            assert produce(broker.port, "t", 0, b"d")[0] != ErrorCode.none
            assert proxy.fired.wait(10)
            wait_for(lambda: proxy.committed is not None, 10)
            assert _settled(broker.port, encode_batch([(None, b"e", (), now)])) == (
                ErrorCode.none,
                4,
            )
            assert fetch(broker.port, "t", 0, 0) == (ErrorCode.none, [b"a", b"b", b"c", b"d", b"e"])
        finally:
            proxy.close()
            broker.stop()


def _committed_offset(port: int, group: str) -> int | None:
    """The group's committed offset of t-0, or None while the coordinator cannot say."""
    response = call_once(
        port,
        OffsetFetchRequest(
            groups=(OffsetFetchRequestGroup(group_id=GroupId(group), topics=None),),
            require_stable=False,
        ),
        timeout=10,
    )
    answer = response.groups[0]
    if answer.error_code != ErrorCode.none:
        return None
    offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
    return int(offsets[0]) if offsets else -1


@pytest.mark.parametrize("hold_s", [0.0, 0.5], ids=["answer-lost", "commit-held"])
def test_an_offset_commit_in_doubt_is_what_the_coordinator_answers_next(
    tmp_path: Path, store_url: str, hold_s: float
) -> None:
    store = urlsplit(store_url)
    with CommitCutProxy(store.hostname or "127.0.0.1", store.port or 5432) as proxy:
        broker = cluster_broker(
            tmp_path, _through(proxy, store_url), 1, "offsets.topic.num.partitions=1"
        )
        try:
            broker.start()
            assert create_topic(broker.port, "t", 1) == ErrorCode.none

            def commit(offset: int) -> ErrorCode:
                response = call_once(broker.port, commit_request("g", offset), timeout=20)
                return ErrorCode(response.topics[0].partitions[0].error_code)

            wait_for(lambda: commit(3) == ErrorCode.none, 20)
            assert _committed_offset(broker.port, "g") == 3
            proxy.cut_after_commit(APPEND, hold_s=hold_s)
            assert commit(5) != ErrorCode.none
            assert proxy.fired.wait(10)
            # Every answer from now on is the commit that is in the store.
            answers: list[int | None] = []

            def answered() -> bool:
                answers.append(_committed_offset(broker.port, "g"))
                return answers[-1] is not None

            wait_for(answered, 20)
            assert set(answers) - {None} == {5}
            assert proxy.committed is True
            assert commit(6) == ErrorCode.none
            assert _committed_offset(broker.port, "g") == 6
        finally:
            proxy.close()
            broker.stop()
