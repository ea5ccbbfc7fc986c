"""A share-partition leader's side of share partitions' state: read from the
share coordinator at a share partition's first use, written to it as
requests change it (Kafka's SharePartition initialisation and write path,
through the persister).

- **First use.** Before a ShareFetch touches a share partition this broker
  does not hold yet, the leader reads its state (ReadShareGroupState with
  the topic partition's leader epoch, which the coordinator records: the
  writes of any earlier leader are fenced from then on). A share partition
  never initialised is initialised here (state epoch 0, start offset -1)
  unless the group coordinator did it first; a start offset of -1 means the
  share partition starts where the group's ``share.auto.offset.reset``
  says, and its first write records that.
- **Writes.** Each change worth keeping (an acknowledgement, a delivery
  ended, the start moved) is written as the share partition's whole state
  (WriteShareGroupState with its state and leader epochs); the request is
  answered once the coordinator says it is durable. A write fenced
  (FENCED_LEADER_EPOCH: another broker leads the topic partition now;
  FENCED_STATE_EPOCH: it was initialised again) or refused because its
  state was deleted drops the share partition here: its next use reads it
  again.
- **Start reset** (AlterShareGroupOffsets) initialises the state again at
  the next state epoch; a deleted group's or topic's share partitions have
  their state deleted (DeleteShareGroupState).
- **Leadership.** When this broker stops leading a topic partition (or
  leads it at a new epoch), its share partitions are dropped, unwritten
  lock ends included: the new leader reads the last state written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.home import LeadershipChange
from kgroups.partitions.log import NotInMemory
from kgroups.share_coordinator.answers import (
    READ_UNINITIALIZED,
    UNINITIALIZED_START_OFFSET,
    WRITE_UNINITIALIZED,
    KeyAnswer,
)
from kgroups.share_partitions.manager import PartitionKey

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.share_persister import SharePersister
    from kgroups.share_partitions.state_records import StateBatch

log = logging.getLogger(__name__)

_FENCED = frozenset({ErrorCode.fenced_leader_epoch, ErrorCode.fenced_state_epoch})


class ShareStateLog:
    def __init__(self, broker: BrokerCore, persister: SharePersister) -> None:
        self._broker = broker
        self._persister = persister
        # Per share partition held here: its state epoch and the leader epoch
        # of the topic partition it was read at.
        self._epochs: dict[PartitionKey, tuple[int, int]] = {}
        # One write of a share partition at a time.
        self._locks: dict[PartitionKey, asyncio.Lock] = {}
        broker.partitions.on_leadership_change(self._on_leadership_change)

    @property
    def persister(self) -> SharePersister:
        return self._persister

    def _leader_epoch(self, key: PartitionKey) -> int | None:
        """The topic partition's leader epoch here; None if not led here."""
        topic = self._broker.topics.by_id(key[1])
        if topic is None:
            return None
        try:
            return self._broker.partitions.log(topic.name, key[2]).leader_epoch
        except (KafkaError, NotInMemory):
            return None

    async def ensure_loaded(self, keys: Iterable[PartitionKey]) -> dict[PartitionKey, ErrorCode]:
        """Read the state of the share partitions not held yet; the error of
        each that could not be read."""
        manager = self._broker.share_partitions
        wanted = [
            k
            for k in keys
            if manager.get(k) is None and k not in manager.stored and k not in self._epochs
        ]
        if not wanted:
            return {}
        results = await asyncio.gather(*(self._load_one(k) for k in wanted))
        return {k: e for k, e in zip(wanted, results, strict=True) if e is not ErrorCode.none}

    async def _load_one(self, key: PartitionKey) -> ErrorCode:
        leader_epoch = self._leader_epoch(key)
        if leader_epoch is None:
            return ErrorCode.not_leader_or_follower
        answer = await self._persister.read(key, leader_epoch)
        if _never_initialized(answer):
            # Never initialised: as the group coordinator would, at state epoch 0.
            initialized = await self._persister.initialize(key, 0, UNINITIALIZED_START_OFFSET)
            if initialized.error is not ErrorCode.none:
                return initialized.error
            answer = await self._persister.read(key, leader_epoch)
        if answer.error is not ErrorCode.none:
            log.warning("reading the state of share partition %s failed: %s", key, answer.error)
            return answer.error
        manager = self._broker.share_partitions
        if manager.get(key) is not None:
            return ErrorCode.none  # another request read it meanwhile
        self._epochs[key] = (answer.state_epoch, leader_epoch)
        if answer.start_offset != UNINITIALIZED_START_OFFSET:
            manager.stored[key] = (answer.start_offset, answer.state_batches)
        return ErrorCode.none

    async def drop_outdated(self, keys: Iterable[PartitionKey]) -> None:
        """Drop the share partitions held here whose stored state moved on
        without this broker: in a cluster, an admin's AlterShareGroupOffsets or
        DeleteShareGroupOffsets goes to the group coordinator's broker, which
        initialises or deletes the state there while no member is in the
        group. Asked when a share session starts, for the share partitions no
        member holds records of; their next use reads them again."""
        manager = self._broker.share_partitions
        held: dict[PartitionKey, int] = {}  # the start offset known here
        for key in keys:
            sp = manager.get(key)
            if key not in self._epochs:
                continue
            if sp is None:
                held[key] = manager.stored.get(key, (UNINITIALIZED_START_OFFSET, ()))[0]
            elif not sp.changed and not sp.holds_acquired():  # nothing unwritten, nobody's
                held[key] = sp.start_offset
        if not held:
            return
        answers = await asyncio.gather(*(self._persister.summary(key) for key in held))
        outdated = []
        for (key, start), answer in zip(held.items(), answers, strict=True):
            epochs = self._epochs.get(key)
            if answer.error is not ErrorCode.none or epochs is None:
                continue  # unknown: kept, a fenced write still drops it
            initialized_again = answer.state_epoch != epochs[0]
            deleted = answer.start_offset == UNINITIALIZED_START_OFFSET != start
            if initialized_again or deleted:
                outdated.append(key)
        if outdated:
            log.info("share partitions %s moved on in the share coordinator: dropped", outdated)
            self.drop(outdated)

    async def persist_changes(self, keys: Iterable[PartitionKey] | None = None) -> ErrorCode:
        """Write what changed in the broker's share partitions (those of
        ``keys``; None: all), start resets and deletions; NONE once durable,
        else the first error."""
        manager = self._broker.share_partitions
        calls = []
        for key in manager.take_reset():
            calls.append(self._reset(key))
        for key, _sp in manager.take_changed(keys):
            calls.append(self._write_latest(key))
        forgotten, manager.forgotten = manager.forgotten, []
        for key in forgotten:
            self._epochs.pop(key, None)
            calls.append(self._delete(key))
        if not calls:
            return ErrorCode.none
        errors = [e for e in await asyncio.gather(*calls) if e is not ErrorCode.none]
        return errors[0] if errors else ErrorCode.none

    async def _write_latest(self, key: PartitionKey) -> ErrorCode:
        """Write the share partition's state as it is once the writes of it
        before are answered: one write of a key at a time, so that a write
        retried (the coordinator moved) never lands after a newer one. A
        write that failed leaves the share partition to be written again."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self._broker.share_partitions.get(key)
            if sp is None:
                return ErrorCode.none  # dropped meanwhile: nothing of it to keep here
            sp.changed = False
            from kgroups.share_partitions.persisted import state_batches

            error = await self._write(key, sp.start_offset, state_batches(sp))
            if error is not ErrorCode.none and error not in _FENCED:
                sp.changed = True
        return error

    async def _write(
        self, key: PartitionKey, start: int, batches: tuple[StateBatch, ...]
    ) -> ErrorCode:
        epochs = self._epochs.get(key)
        if epochs is None:
            epochs = await self._adopt(key)
            if epochs is None:
                return ErrorCode.coordinator_not_available
        answer = await self._persister.write(key, epochs[0], epochs[1], start, batches)
        return self._outcome(key, answer)

    async def _adopt(self, key: PartitionKey) -> tuple[int, int] | None:
        """A share partition made here without a read (a start reset, or made
        before this broker read its state): read its epochs now."""
        leader_epoch = self._leader_epoch(key)
        if leader_epoch is None:
            return None
        answer = await self._persister.read(key, leader_epoch)
        if _never_initialized(answer):
            init = await self._persister.initialize(key, 0, UNINITIALIZED_START_OFFSET)
            if init.error is not ErrorCode.none:
                return None
            answer = await self._persister.read(key, leader_epoch)
        if answer.error is not ErrorCode.none:
            return None
        self._epochs[key] = (answer.state_epoch, leader_epoch)
        return self._epochs[key]

    async def _reset(self, key: PartitionKey) -> ErrorCode:
        """AlterShareGroupOffsets: the state starts again at the next state epoch."""
        sp = self._broker.share_partitions.get(key)
        if sp is None:
            return ErrorCode.none
        summary = await self._persister.summary(key)
        if summary.error is not ErrorCode.none:
            return summary.error
        state_epoch = summary.state_epoch + 1
        answer = await self._persister.initialize(key, state_epoch, sp.start_offset)
        if answer.error is not ErrorCode.none:
            return answer.error
        leader_epoch = self._leader_epoch(key)
        if leader_epoch is None:
            # Another broker leads the topic partition: it reads the new state.
            self.drop([key])
            return ErrorCode.none
        read = await self._persister.read(key, leader_epoch)
        if read.error is ErrorCode.none:
            self._epochs[key] = (read.state_epoch, leader_epoch)
        return read.error

    async def _delete(self, key: PartitionKey) -> ErrorCode:
        answer = await self._persister.delete(key)
        if answer.error is ErrorCode.unknown_topic_or_partition:
            return ErrorCode.none  # the topic is gone, and its state with it
        return answer.error

    def _outcome(self, key: PartitionKey, answer: KeyAnswer) -> ErrorCode:
        if answer.error in _FENCED:
            log.info("share partition %s was fenced (%s): dropped", key, answer.error.name)
            self.drop([key])
        elif answer.error is ErrorCode.invalid_request and answer.message == WRITE_UNINITIALIZED:
            log.info("the state of share partition %s was deleted: dropped", key)
            self.drop([key])
        return answer.error

    def drop(self, keys: Iterable[PartitionKey]) -> None:
        """Forget these share partitions here (their stored state stays)."""
        manager = self._broker.share_partitions
        for key in keys:
            self._epochs.pop(key, None)
            lock = self._locks.get(key)
            if lock is not None and not lock.locked():
                del self._locks[key]
            manager.unload(key)

    def _on_leadership_change(self, change: LeadershipChange) -> None:
        topics = self._broker.topics
        moved = set(change.lost) | set(change.gained)
        if not moved:
            return
        held = {k for k in self._epochs} | {
            k for k, _sp in self._broker.share_partitions.partitions()
        }
        gone = []
        for key in held:
            topic = topics.by_id(key[1])
            if topic is not None and (topic.name, key[2]) in moved:
                gone.append(key)
        if gone:
            self.drop(gone)


def _never_initialized(answer: KeyAnswer) -> bool:
    return answer.error is ErrorCode.invalid_request and answer.message == READ_UNINITIALIZED
