"""Ending a transaction in two steps: its Prepare record, then its markers,
then (once every partition has its marker) its Complete record; with the
markers still awaited and what is to be tried again.

EndTxn, a fence or a timeout writes PrepareCommit/PrepareAbort and answers;
once that is durable the shell writes the markers to the transaction's
partitions and reports them (``written``); when every partition has its
marker, CompleteCommit/CompleteAbort is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kgroups.errors import ErrorCode
from kgroups.transactions.messages import TopicPartition
from kgroups.transactions.records import NO_PRODUCER_EPOCH
from kgroups.transactions.result import TxnMarkers
from kgroups.transactions.state import (
    MAX_PRODUCER_EPOCH,
    PREPARED,
    Transit,
    TxnMetadata,
    TxnState,
)
from kgroups.transactions.writes import Call, Reply

# Partitions that cannot take a marker: the producer could not have written
# to them either, so they are done without one.
_MARKER_NOT_NEEDED = frozenset(
    {ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version}
)

# Marker errors after which the partition is tried again; after
# INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED a newer
# coordinator owns the transaction and this one stops sending.
_COORDINATOR_FENCED = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced}
)


class TransactionEnding:
    def __init__(
        self,
        txns: Mapping[str, TxnMetadata],
        coordinator_epoch: int,
        partition_exists: Callable[[str, int], bool],
    ) -> None:
        self._txns = txns
        # Markers carry it, so that a partition leader can refuse those of
        # an older coordinator.
        self._coordinator_epoch = coordinator_epoch
        self._partition_exists = partition_exists
        # Prepared transactions: the partitions still without their marker.
        self._awaiting: dict[str, set[TopicPartition]] = {}
        # What to try again at the next retry: markers of these partitions,
        # the Complete record of these transactions.
        self._marker_retries: dict[str, set[TopicPartition]] = {}
        self._complete_retries: set[str] = set()

    # -- the Prepare record --------------------------------------------------

    def fence_and_abort(
        self, meta: TxnMetadata, now_ms: int, call: Call, reply: Reply | None
    ) -> None:
        """Bump the epoch of an ongoing transaction's producer, then abort it.

        As in Kafka the bumped epoch takes effect at once (the fenced producer
        is refused from now on), and a fence whose record failed is not
        bumped again."""
        if not meta.failed_epoch_fence and meta.producer_epoch < MAX_PRODUCER_EPOCH:
            meta.producer_epoch += 1
        meta.last_producer_epoch = NO_PRODUCER_EPOCH
        meta.pending = TxnState.PREPARE_EPOCH_FENCE
        self.prepare(meta, False, now_ms, call, reply, fence=True)

    def prepare(
        self,
        meta: TxnMetadata,
        commit: bool,
        now_ms: int,
        call: Call,
        reply: Reply | None,
        *,
        fence: bool = False,
    ) -> None:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        transit = meta.transit(state, now_ms)
        call.write(meta, transit, reply, fence)
        call.markers.append(self._markers(meta.transactional_id, transit, transit.partitions))

    def prepared(self, transactional_id: str, partitions: Iterable[TopicPartition]) -> None:
        """The Prepare record is stored (or loaded): each partition is to get its marker."""
        self._awaiting[transactional_id] = set(partitions)

    def forget(self, transactional_id: str) -> None:
        """The id is gone: no marker of it is awaited any more."""
        self._awaiting.pop(transactional_id, None)
        self._marker_retries.pop(transactional_id, None)

    def clear(self) -> None:
        self._awaiting.clear()
        self._marker_retries.clear()
        self._complete_retries.clear()

    # -- the markers -----------------------------------------------------------

    def _markers(
        self,
        transactional_id: str,
        transit: Transit | TxnMetadata,
        partitions: frozenset[TopicPartition],
    ) -> TxnMarkers:
        return TxnMarkers(
            transactional_id,
            transit.producer_id,
            transit.producer_epoch,
            self._coordinator_epoch,
            transit.state is TxnState.PREPARE_COMMIT,
            partitions,
        )

    def loaded(self, meta: TxnMetadata, call: Call) -> None:
        """A transaction loaded in a Prepare state: its markers again."""
        self.prepared(meta.transactional_id, meta.partitions)
        call.markers.append(self._markers(meta.transactional_id, meta, meta.partitions))

    def written(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        errors: Mapping[TopicPartition, ErrorCode],
        now_ms: int,
        call: Call,
    ) -> bool:
        """The partition leaders answered the markers of a TxnMarkers; whether
        a partition is to be tried again (after ``retry_backoff_ms``).

        Partitions whose marker is written (or whose topic is gone) are done.
        Once every partition has its marker the transaction completes. A
        report for a transaction that moved on meanwhile is ignored."""
        meta = self._txns.get(transactional_id)
        awaiting = self._awaiting.get(transactional_id)
        if (
            meta is None
            or awaiting is None
            or meta.producer_id != producer_id
            or meta.producer_epoch != producer_epoch
        ):
            return False
        retry = False
        for tp, error in errors.items():
            if (
                error is ErrorCode.none
                or error in _MARKER_NOT_NEEDED
                or (
                    error is ErrorCode.unknown_topic_or_partition
                    and not self._partition_exists(*tp)
                )
            ):
                awaiting.discard(tp)
            elif error in _COORDINATOR_FENCED:
                # A newer coordinator completes this transaction.
                self.forget(transactional_id)
                return retry
            elif tp in awaiting:
                self._marker_retries.setdefault(transactional_id, set()).add(tp)
                retry = True
        if not awaiting:
            self._complete(meta, now_ms, call)
        return retry

    def pending_markers(self) -> list[TxnMarkers]:
        """The markers of every prepared transaction not yet written (after a
        shell lost track of them, say)."""
        return [
            self._markers(txn_id, self._txns[txn_id], frozenset(partitions))
            for txn_id, partitions in self._awaiting.items()
        ]

    # -- the Complete record ---------------------------------------------------

    def _complete(self, meta: TxnMetadata, now_ms: int, call: Call) -> None:
        self.forget(meta.transactional_id)
        state = (
            TxnState.COMPLETE_COMMIT
            if meta.state is TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        call.write(meta, meta.transit(state, now_ms, partitions=frozenset()))

    def complete_failed(self, transactional_id: str) -> None:
        """The Complete record was not stored: it is written again at the next retry."""
        self._complete_retries.add(transactional_id)

    def retry(self, now_ms: int, call: Call) -> None:
        """Markers that failed and Complete records not stored, again."""
        retries, self._marker_retries = self._marker_retries, {}
        for txn_id, partitions in retries.items():
            meta = self._txns.get(txn_id)
            awaiting = self._awaiting.get(txn_id)
            if meta is not None and awaiting and meta.pending is None and partitions & awaiting:
                call.markers.append(self._markers(txn_id, meta, frozenset(partitions & awaiting)))
        completes, self._complete_retries = self._complete_retries, set()
        for txn_id in completes:
            meta = self._txns.get(txn_id)
            if meta is not None and meta.state in PREPARED and meta.pending is None:
                self._complete(meta, now_ms, call)
