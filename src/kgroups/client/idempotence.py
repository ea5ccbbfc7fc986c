"""The idempotent producer's bookkeeping (the idempotence half of the Java client's
TransactionManager).

The broker gives the producer an id and an epoch (InitProducerId). Every batch
carries them and the sequence number of its first record, counted per
partition; the broker appends a batch only if its sequence follows the last
one it stored, and answers a batch it already stored (a retry whose first
answer was lost) with the original offset instead of storing it twice.

For that to keep order across retries, a partition's batches must reach the
broker in sequence order: after a failure only the first unacknowledged batch
goes out, alone, until it succeeds -- unless the broker meanwhile acknowledged
a later batch: it appends a producer's batches strictly in sequence order, so
the earlier one is stored too, and counts as delivered. When a sequence can no longer be trusted --
a batch failed for good after getting its sequence, or the broker forgot the
producer (UNKNOWN_PRODUCER_ID) -- the producer asks InitProducerId again with its
id and epoch (KIP-360); without a transactional id the broker answers with a fresh
id, and it accepts sequences from zero again either way.
"""

from __future__ import annotations

from kgroups.client.consumer_record import TopicPartition

__all__ = ["IdempotenceState", "next_sequence"]

_MAX_SEQUENCE = 2**31 - 1


def next_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from int32 max to 0, as the broker counts them."""
    if sequence > _MAX_SEQUENCE - increment:
        return increment - (_MAX_SEQUENCE - sequence) - 1
    return sequence + increment


class IdempotenceState:
    def __init__(self) -> None:
        self.producer_id = -1
        self.epoch = -1
        self.bump_needed = False
        self._next: dict[TopicPartition, int] = {}
        self._first_acked: dict[TopicPartition, int] = {}
        self._last_acked: dict[TopicPartition, int] = {}

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    def set_producer(self, producer_id: int, epoch: int) -> None:
        """A new id or epoch: every partition counts from zero again."""
        self.producer_id = producer_id
        self.epoch = epoch
        self.bump_needed = False
        self._next.clear()
        self._first_acked.clear()
        self._last_acked.clear()

    def assign(self, tp: TopicPartition, record_count: int) -> int:
        """The base sequence of the partition's next batch."""
        base = self._next.get(tp, 0)
        self._next[tp] = next_sequence(base, record_count)
        return base

    def has_acknowledged(self, tp: TopicPartition) -> bool:
        """Whether the broker holds a record of us for this partition (this epoch).
        Until it does, the partition's batches go one at a time: a broker accepts
        any sequence from a producer it does not know, so a first batch that
        failed could otherwise be overtaken by the next one, leaving a gap."""
        return tp in self._first_acked

    def acknowledged(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None:
        self._first_acked.setdefault(tp, base_sequence)
        last = next_sequence(base_sequence, record_count - 1)
        previous = self._last_acked.get(tp, -1)
        # Keep the highest: responses of pipelined batches may arrive in any order.
        if previous < 0 or _after(last, previous):
            self._last_acked[tp] = last

    def stored(self, tp: TopicPartition, base_sequence: int, record_count: int) -> bool:
        """Whether a batch whose answer was lost is known to be stored anyway: the
        broker acknowledged a batch at or after it, and it appends in order."""
        first_acked = self._first_acked.get(tp)
        last_acked = self._last_acked.get(tp)
        if first_acked is None or last_acked is None or base_sequence < 0:
            return False
        # The broker's record of us starts at the first acknowledged batch and has
        # no gaps from there: only batches in that stretch are known stored.
        if base_sequence != first_acked and not _after(base_sequence, first_acked):
            return False
        last = next_sequence(base_sequence, record_count - 1)
        return last == last_acked or _after(last_acked, last)

    def is_next_in_line(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Whether nothing before this batch is still unacknowledged."""
        return base_sequence == next_sequence(self._last_acked.get(tp, -1), 1) or (
            tp not in self._last_acked and base_sequence == 0
        )


def _after(a: int, b: int) -> bool:
    """Whether sequence ``a`` comes after ``b``, allowing for wrap-around."""
    return 0 < (a - b) % (_MAX_SEQUENCE + 1) < (_MAX_SEQUENCE + 1) // 2
