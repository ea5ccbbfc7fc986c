"""A shard's calls, journaled (rollback.py says why and what): each call
opens a snapshot (``begin``) and closes it into its Result (``result``); a
call whose batch is not durable yet, or that builds on one, is kept until it
is; a batch that fails to append is taken back (``append_failed``): each part
of a group it changed put back as the calls' snapshots had it, and their
requests answered with the append's error."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupCoordinator
from kgroups.coordinator.delayed_operations import Timers
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.failed_replies import failed_response
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.result import AppendToken, Result
from kgroups.coordinator.rollback import MEMBERS, OFFSETS, InFlight, Kept, Part, Snapshot
from kgroups.coordinator.shard_parts import ShardParts
from kgroups.coordinator.turn import Turn


class CallJournal:
    def __init__(self, parts: ShardParts, first_result: Callable[[int], None]) -> None:
        self._table = parts.table
        self._timers = parts.timers
        self._consumer = parts.consumer
        self._share = parts.share
        self._membership = parts.membership
        self._txn = parts.txn
        self._txn_batches = parts.txn_batches
        # Called with the time of the first call that tells it (None after).
        self._first_result: Callable[[int], None] | None = first_result
        self._batch_ids = itertools.count(1)
        # Calls whose changes are taken back if a batch fails to append.
        self.in_flight = InFlight()
        self._open: Snapshot | None = None

    def begin(self, *reads: Part) -> None:
        """Journal what the call changes, from here to its ``result``;
        ``reads`` is what the request's answer shows."""
        snapshot = Snapshot(reads)
        self._open = snapshot
        self._table.journal = snapshot
        self._timers.journal = snapshot.timers
        self._consumer.table.journal = snapshot.consumer
        self._consumer.timers.journal = snapshot.consumer_timers
        self._share.table.journal = snapshot.share

    def begin_without_records(self, part: Part) -> None:
        """For a call that never writes records (a heartbeat, a fetch): it
        needs a journal only if it builds on a batch in flight."""
        if self.in_flight.touches(part):
            self.begin(part)

    def begin_membership(self, group_id: str) -> None:
        self.begin((group_id, MEMBERS))
        self.guard_if_in_flight(group_id)

    def guard_if_in_flight(self, group_id: str) -> None:
        in_flight = self.in_flight
        if in_flight.touches((group_id, MEMBERS)) and not in_flight.holds_copy(group_id):
            # These changes build on a batch in flight: copy the group so that
            # they can be taken back with it, members included.
            self._table.guard(group_id)

    def result(self, fx: Effects, now_ms: int) -> Result:
        """The call's Result; the call is kept if it may have to be taken back."""
        if self._first_result is not None:
            first_result, self._first_result = self._first_result, None
            first_result(now_ms)
        snapshot, self._open = self._open, None
        self._table.journal = None
        self._timers.journal = None
        self._consumer.table.journal = None
        self._consumer.timers.journal = None
        self._share.table.journal = None
        result = fx.to_result(next(self._batch_ids))
        token = result.append_token
        if self._txn.changes:
            self._txn_batches.call_done(token)
        in_flight = self.in_flight
        if snapshot is None or (token is None and not in_flight):
            return result
        touched = snapshot.touched()
        if token is not None or in_flight.touches_any(touched):
            in_flight.keep(
                Kept(
                    None if token is None else token.batch_id,
                    snapshot,
                    frozenset(touched),
                    tuple(result.replies),
                )
            )
        return result

    def unjournaled_result(self, fx: Effects) -> Result:
        """The Result of a call that changes nothing a batch could take back."""
        return fx.to_result(next(self._batch_ids))

    def append_durable(self, batch_id: int) -> None:
        """The batch (and every batch before it) is durable."""
        self.in_flight.durable(batch_id)
        self._txn_batches.durable(batch_id)

    def append_failed(self, append_token: AppendToken, error: ErrorCode, now_ms: int) -> Result:
        """Take the batch back with every later call built on it; answer their
        requests with ``error`` (only the batch's, when it is no longer kept)."""
        fx = Effects()
        # A transactional offset commit changes no group, only pending
        # offsets: its answer must not stand as that of a batch storing nothing.
        transactional = self._txn_batches.failed(append_token.batch_id)
        taken = self.in_flight.take_failed(append_token.batch_id)
        if taken is None:
            for reply_to, response in append_token.replies:
                fx.reply(reply_to, failed_response(response, error))
            self.begin()
            return self.result(fx, now_ms)
        failed, parts = taken
        groups = {group_id for group_id, part in parts if part == MEMBERS}
        discarded = {group_id: self._table.get(group_id) for group_id in groups}
        for kept in reversed(failed):
            _restore(kept.snapshot, parts, self._table, self._timers, self._consumer)
            share_undo = [c for c in kept.snapshot.share if (c[0].group_id, MEMBERS) in parts]
            if share_undo:
                self._share.table.undo(share_undo)
        answered = _answer_taken_back(failed, parts, error, fx, stands=not transactional)
        self.begin(*parts)
        turn = Turn(now_ms, fx)
        for group_id in groups:
            self._membership.on_restored(
                discarded[group_id], self._table.get(group_id), answered, error, turn
            )
        return self.result(fx, now_ms)


def _restore(
    snapshot: Snapshot,
    parts: set[Part],
    table: GroupTable,
    timers: Timers,
    consumer: ConsumerGroupCoordinator,
) -> None:
    """Put back what the snapshot journaled of these parts of groups.

    Group objects and copies hold both parts, so they come back only with
    both (which is how ``stored`` counts them)."""
    for group_id, group in snapshot.slots.items():
        if (group_id, MEMBERS) in parts:
            table.put(group_id, group)
    for group_id, group in snapshot.copies.items():
        if (group_id, MEMBERS) in parts:
            table.put(group_id, group)
    for (group_id, partition), offset in snapshot.offsets.items():
        if (group_id, OFFSETS) in parts:
            table.put_offset(group_id, partition, offset)
    for key, entry in snapshot.timers.items():
        if (key.group_id, MEMBERS) in parts:
            timers.restore(key, entry)
    undo = [c for c in snapshot.consumer if (c[0].group_id, MEMBERS) in parts]
    if undo:
        consumer.table.undo(undo)
    for consumer_key, consumer_entry in snapshot.consumer_timers.items():
        if (consumer_key.group_id, MEMBERS) in parts:
            consumer.timers.restore(consumer_key, consumer_entry)


def _answer_taken_back(
    failed: list[Kept], parts: set[Part], error: ErrorCode, fx: Effects, *, stands: bool
) -> set[int]:
    """Every request of the calls taken back gets ``error``; the ids of
    their reply_tos."""
    first = failed[0]
    # A batch that changed no stored state (the Empty record of a group
    # its last member left) takes nothing back: its answers stand. Not
    # so for offsets of a transaction (``stands`` False): the answer says
    # they are stored, and the transaction would commit without them.
    answers_stand = stands and not parts
    answered: set[int] = set()
    for kept in failed:
        for reply_to, response in kept.replies:
            stands = answers_stand and kept is first
            fx.reply(reply_to, response if stands else failed_response(response, error))
            answered.add(id(reply_to))
    return answered
