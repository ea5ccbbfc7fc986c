"""What an IO shell owes one group coordinator shard, without the IO.

One driver per coordinator partition (`__consumer_offsets`,
`__transaction_state`). The shell gives it every Result
of the shard and the events of storage and time; the driver says what to do:

- ``appends``: batches of records to append to the partition, in this order
  (so the log holds records in the order the shard applied them). The shell
  may take them when it likes, several together (once per loop turn, say):
  a queued batch already holds back the replies that reveal its state. Each
  is reported back, in order: ``durable`` once stored for good (appended,
  and fsynced if the flush policy asks for it) or ``failed``;
- ``take_replies()``: replies to send now. A reply leaves only once the records
  of its result, and the pending writes of the state it reveals (its reach,
  see pending_writes.py), are durable. A reply still waiting after
  ``commit_timeout_ms`` leaves as ``TIMED_OUT``;
- ``next_deadline_ms()``: when to call ``on_clock`` next (the shard's timers
  and the reply timeouts); ``nothing_due_before(ms)`` says cheaply whether a
  call already planned at ``ms`` is soon enough (early calls are harmless).

- ``markers``: a transaction coordinator's markers whose records are durable,
  for the shell to write (it reports them to the shard).

A failed append, at once or later at its fsync, goes to
``shard.append_failed``, whose result is handled like any other.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from kgroups.coordinator.result import ProducerBatch, Record
from kgroups.errors import ErrorCode
from kgroups.runtime.pending_writes import EVERYTHING, PendingWrites, Reach, StateKey, written


class ShardResult(Protocol):
    """What a shard's call returns (coordinator.result.Result, transactions.result.TxnResult)."""

    @property
    def records(self) -> list[Record]: ...
    @property
    def replies(self) -> Sequence[tuple[object, object]]: ...
    @property
    def append_token(self) -> Any: ...
    @property
    def producer(self) -> ProducerBatch | None: ...


class HostedShard(Protocol):
    """What the driver and the runtime call on a shard."""

    def append_durable(self, append_token: Any, /) -> None: ...
    def append_failed(self, append_token: Any, error: ErrorCode, now_ms: int, /) -> ShardResult: ...
    def on_timer(self, now_ms: int, /) -> ShardResult: ...
    def next_deadline_ms(self) -> int | None: ...
    def nothing_due_before(self, ms: int, /) -> bool: ...
    def begin_load(self) -> None: ...
    def unload(self, now_ms: int, /) -> ShardResult: ...


class TimedOut:
    """The answer for a reply whose records were not durable in time."""

    def __repr__(self) -> str:
        return "TIMED_OUT"


TIMED_OUT: Final = TimedOut()
# A reply to send: the request's reply_to token and its answer.
Outgoing = tuple[object, object]


class _Waiter:
    """A result whose replies wait: for its own records, then for the writes before it."""

    __slots__ = (
        "deadline_ms",
        "dependents",
        "durable",
        "keys",
        "reach",
        "replies",
        "settled",
        "waits",
    )

    def __init__(
        self,
        replies: Sequence[tuple[object, object]],
        keys: set[StateKey],
        reach: Reach,
        durable: bool,
        waits: list[_Waiter],
        deadline_ms: int,
    ) -> None:
        self.replies = replies
        self.keys = keys
        self.reach = reach
        self.durable = durable
        self.waits = set(waits)
        self.dependents: list[_Waiter] = []
        self.deadline_ms = deadline_ms
        self.settled = False


class Append:
    """One batch for the shell to append now. It reports back with ``durable``
    (at once, or after ``stored`` once fsynced) or ``failed``."""

    __slots__ = ("_reach", "_waiter", "markers", "producer", "records", "token")

    def __init__(self, result: ShardResult, reach: Reach, waiter: _Waiter) -> None:
        self.records: list[Record] = result.records
        self.token: Any = result.append_token
        self.producer: ProducerBatch | None = result.producer
        # A transaction coordinator's markers, written once the records are durable.
        self.markers: list[object] = getattr(result, "markers", None) or []
        self._reach = reach
        self._waiter = waiter


class CoordinatorDriver:
    def __init__(
        self,
        shard: HostedShard,
        commit_timeout_ms: int,
        on_result: Callable[[ShardResult], None] | None = None,
    ) -> None:
        self.shard = shard
        self._timeout_ms = commit_timeout_ms
        # Sees every result handled (tests read them).
        self._on_result = on_result
        self.appends: deque[Append] = deque()
        self._replies: list[Outgoing] = []
        # Transaction markers whose records are durable: the shell writes them.
        self.markers: list[object] = []
        self._pending: PendingWrites[_Waiter] = PendingWrites()
        # Waiters by deadline: every wait lasts as long, so submission order is deadline order.
        self._waiting: deque[_Waiter] = deque()

    # -- input --------------------------------------------------------------

    def submit(self, result: ShardResult, now_ms: int, reach: Reach = ()) -> None:
        """A result of the shard; ``reach`` is the state its request reveals."""
        if self._on_result is not None:
            self._on_result(result)
        if result.records:
            waiter = self._wait(result, reach, False, now_ms)
            assert waiter is not None  # records not yet durable always wait
            self.appends.append(Append(result, reach, waiter))
        else:
            self._wait(result, reach, True, now_ms)
            markers = getattr(result, "markers", None)
            if markers:  # of records durable before
                self.markers.extend(markers)

    def durable(self, append: Append, now_ms: int) -> None:
        """The batch is stored for good: the shard drops its snapshot."""
        self.shard.append_durable(append.token)
        if append.markers:
            self.markers.extend(append.markers)
        waiter = append._waiter
        waiter.durable = True
        if not waiter.waits:
            self._settle(waiter)

    def failed(self, append: Append, error: ErrorCode, now_ms: int) -> None:
        """The batch was not stored: the shard takes it back and answers with ``error``."""
        result = self.shard.append_failed(append.token, error, now_ms)
        waiter = append._waiter
        waiter.durable = True
        waiter.replies = []
        if result.records:
            # Its answers wait for what the lost batch waited for.
            self.submit(result, now_ms, waiter.reach)
        else:
            # Errors reveal no stored state: they leave at once, also for the
            # calls taken back with the batch, whose own appends may still be
            # waiting for an fsync.
            if self._on_result is not None:
                self._on_result(result)
            self._replies.extend(result.replies)
        if not waiter.waits:
            self._settle(waiter)

    def on_clock(self, now_ms: int) -> None:
        """Fire the shard's timers due and give up the replies waiting too long."""
        deadline = self.shard.next_deadline_ms()
        if deadline is not None and deadline <= now_ms:
            self.submit(self.shard.on_timer(now_ms), now_ms)
        waiting = self._waiting
        while waiting and (waiting[0].settled or waiting[0].deadline_ms <= now_ms):
            self._give_up(waiting.popleft())

    def give_up(self) -> None:
        """Shutting down: every reply still waiting leaves as ``TIMED_OUT``."""
        while self._waiting:
            self._give_up(self._waiting.popleft())

    # -- output -------------------------------------------------------------

    def take_replies(self) -> list[Outgoing]:
        replies, self._replies = self._replies, []
        return replies

    def next_deadline_ms(self) -> int | None:
        deadline = self.shard.next_deadline_ms()
        waiting = self._waiting
        while waiting and waiting[0].settled:
            waiting.popleft()
        if waiting and (deadline is None or waiting[0].deadline_ms < deadline):
            return waiting[0].deadline_ms
        return deadline

    def waiting(self) -> bool:
        """Whether a reply still waits for an append to be reported."""
        return any(not w.settled and w.replies for w in self._waiting)

    def nothing_due_before(self, ms: int) -> bool:
        """Whether nothing is due before ``ms``, without the cleanup that
        ``next_deadline_ms`` does (so the next deadline may be later)."""
        waiting = self._waiting
        if waiting and waiting[0].deadline_ms < ms:
            return False
        return self.shard.nothing_due_before(ms)

    # -- settling -----------------------------------------------------------

    def _wait(
        self, result: ShardResult, reach: Reach, durable: bool, now_ms: int
    ) -> _Waiter | None:
        """Send the result's replies now if nothing holds them, else a waiter for them."""
        if durable and not self._pending:
            self._replies.extend(result.replies)
            return None
        keys = written(result.records) if result.records else set()
        full_reach = _result_reach(result, reach, keys)
        waits = self._pending.before(full_reach)
        if durable and not waits:
            self._replies.extend(result.replies)
            return None
        waiter = _Waiter(
            result.replies, keys, full_reach, durable, waits, now_ms + self._timeout_ms
        )
        for earlier in waits:
            earlier.dependents.append(waiter)
        self._pending.add(keys, waiter)
        if result.replies:
            self._waiting.append(waiter)
        return waiter

    def _settle(self, waiter: _Waiter) -> None:
        """Its records and all it waited for are durable: reply, release its state."""
        ready = [waiter]
        while ready:
            done = ready.pop()
            self._replies.extend(done.replies)
            done.replies = []
            self._pending.settled(done.keys, done)
            done.settled = True
            for later in done.dependents:
                later.waits.discard(done)
                if later.durable and not later.waits:
                    ready.append(later)

    def _give_up(self, waiter: _Waiter) -> None:
        self._replies.extend((reply_to, TIMED_OUT) for reply_to, _ in waiter.replies)
        waiter.replies = []


def _result_reach(result: ShardResult, reach: Reach, writes: set[StateKey]) -> Reach:
    """All the state a result's replies reveal; a reply token may say its own
    (a ``reach`` attribute), one that does not reveals everything."""
    if reach is EVERYTHING:
        return EVERYTHING
    keys = writes.union(reach)
    for token, _response in result.replies:
        token_reach: Reach = getattr(token, "reach", EVERYTHING)
        if token_reach is EVERYTHING:
            return EVERYTHING
        keys.update(token_reach)
    return tuple(keys)
