"""The shell's contract, on its own: appends in order, replies once durable,
failed appends answered by the shard, reply timeouts."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.static.primitive import i32

from kgroups.coordinator import CoordinatorConfig, GroupCoordinatorShard, RequestContext
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId
from kgroups.runtime.coordinator_driver import TIMED_OUT, Append, CoordinatorDriver
from kgroups.runtime.pending_writes import request_reach

from group_requests import commit_request

NOW = 1_700_000_000_000
TIMEOUT_MS = 5_000


class Token:
    """A reply_to that names the state its request reveals, as the runtime's do."""

    def __init__(self, group: str, api_key: int) -> None:
        self.reach = request_reach(group, api_key)


def _driver() -> CoordinatorDriver:
    shard = GroupCoordinatorShard(
        0, CoordinatorConfig(), partition_exists=lambda t, p: t == "t" and p == 0
    )
    return CoordinatorDriver(shard, TIMEOUT_MS)


def _ctx(token: Token) -> RequestContext:
    return RequestContext(api_version=9, client_id="c", client_host="/h", reply_to=token)


def _commit(driver: CoordinatorDriver, group: str, offset: int) -> Token:
    token = Token(group, apis.OFFSET_COMMIT)
    request = commit_request(group, offset)
    driver.submit(driver.shard.offset_commit(request, _ctx(token), NOW), NOW, token.reach)
    return token


def _fetch(driver: CoordinatorDriver, group: str) -> Token:
    token = Token(group, apis.OFFSET_FETCH)
    request = OffsetFetchRequestGroup(
        group_id=GroupId(group), member_id=None, member_epoch=i32(-1), topics=None
    )
    driver.submit(driver.shard.offset_fetch(request, _ctx(token), NOW), NOW, token.reach)
    return token


def _appended(driver: CoordinatorDriver) -> list[Append]:
    """Take the appends asked for (appended, not yet durable)."""
    appends = list(driver.appends)
    driver.appends.clear()
    return appends


def _answers(driver: CoordinatorDriver) -> dict[object, Any]:
    return dict(driver.take_replies())


def test_replies_wait_for_their_records_and_for_earlier_writes_of_their_state() -> None:
    driver = _driver()
    g = _commit(driver, "g", 5)
    (g_append,) = _appended(driver)
    h = _commit(driver, "h", 1)
    (h_append,) = _appended(driver)
    g_fetch = _fetch(driver, "g")
    assert _answers(driver) == {}
    driver.durable(h_append, NOW)
    assert set(_answers(driver)) == {h}  # another group's write: not held
    driver.durable(g_append, NOW)
    assert set(_answers(driver)) == {g, g_fetch}


def test_a_failed_batch_is_answered_by_the_shard_with_its_error() -> None:
    driver = _driver()
    _commit(driver, "g", 5)
    driver.durable(driver.appends.popleft(), NOW)
    driver.take_replies()
    lost = _commit(driver, "g", 6)
    (append,) = _appended(driver)
    driver.failed(append, ErrorCode.not_enough_replicas, NOW)
    answers = _answers(driver)
    assert list(answers) == [lost]
    assert answers[lost].topics[0].partitions[0].error_code == ErrorCode.coordinator_not_available
    fetched = _fetch(driver, "g")
    answer = _answers(driver)[fetched]
    assert answer.groups[0].topics[0].partitions[0].committed_offset == 5


def test_a_reply_not_durable_in_time_is_given_up_at_its_deadline() -> None:
    driver = _driver()
    token = _commit(driver, "g", 5)
    (append,) = _appended(driver)
    assert driver.next_deadline_ms() == NOW + TIMEOUT_MS
    driver.on_clock(NOW + TIMEOUT_MS - 1)
    assert _answers(driver) == {}
    driver.on_clock(NOW + TIMEOUT_MS)
    assert _answers(driver) == {token: TIMED_OUT}
    later = _fetch(driver, "g")  # the write is still pending: a reader waits for it
    assert _answers(driver) == {}
    driver.durable(append, NOW + TIMEOUT_MS)
    assert set(_answers(driver)) == {later}  # the commit's own reply went already


def test_a_batch_the_shell_has_not_taken_yet_holds_back_the_replies_that_reveal_it() -> None:
    """The shell may append once per loop turn: a commit queued in this turn
    already holds back a fetch of its group's offsets, not another group's."""
    driver = _driver()
    g = _commit(driver, "g", 5)
    g_fetch = _fetch(driver, "g")
    h_fetch = _fetch(driver, "h")
    assert set(_answers(driver)) == {h_fetch}
    (append,) = _appended(driver)
    driver.durable(append, NOW)
    answers = _answers(driver)
    assert list(answers) == [g, g_fetch]
    fetched = answers[g_fetch].groups[0].topics[0].partitions[0]
    assert fetched.committed_offset == 5


def test_transaction_markers_leave_once_their_prepare_record_is_durable() -> None:
    from kgroups.transactions import messages as m
    from kgroups.transactions.config import TransactionConfig
    from kgroups.transactions.shard import TransactionCoordinatorShard

    shard = TransactionCoordinatorShard(
        0, TransactionConfig(), coordinator_epoch=0, next_producer_id=lambda: 7
    )
    driver = CoordinatorDriver(shard, TIMEOUT_MS)

    def run(result: Any) -> list[Any]:
        driver.submit(result, NOW)
        for append in _appended(driver):
            driver.durable(append, NOW)
        return [answer for _token, answer in driver.take_replies()]

    ctx = RequestContext(api_version=4, client_id="c", client_host="/h", reply_to=object())
    (init,) = run(shard.init_producer_id(m.InitProducerId("tx", 60_000), ctx, NOW))
    pid, epoch = init.producer_id, init.producer_epoch
    run(shard.add_partitions(m.AddPartitions("tx", pid, epoch, (("t", 0),)), ctx, NOW))
    assert driver.markers == []
    driver.submit(shard.end_txn(m.EndTxn("tx", pid, epoch, commit=True), ctx, NOW), NOW)
    (prepare,) = _appended(driver)
    assert driver.markers == []  # not before PrepareCommit is durable
    driver.durable(prepare, NOW)
    (marker,) = driver.markers
    assert (marker.producer_id, marker.commit, marker.partitions) == (
        pid,
        True,
        frozenset({("t", 0)}),
    )
