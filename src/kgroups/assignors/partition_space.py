"""All partitions of the subscribed topics, numbered 0..N-1.

The sticky assignors handle up to millions of partitions; as plain ints (topic
by topic, in Java's topic order, then by partition) they fit in arrays and
slices, and TopicPartition objects are only made for the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat

from kgroups.assignors.member_order import java_string_key
from kgroups.assignors.protocol import TopicPartition

__all__ = ["PartitionSpace"]


class PartitionSpace:
    def __init__(self, partitions_per_topic: Mapping[str, int], topics: Iterable[str]) -> None:
        """Numbers the partitions of ``topics`` that exist (count > 0)."""
        present = {t for t in topics if partitions_per_topic.get(t, 0) > 0}
        self.topics: list[str] = sorted(present, key=java_string_key)
        self.counts: list[int] = [partitions_per_topic[t] for t in self.topics]
        self.topic_id: dict[str, int] = {t: i for i, t in enumerate(self.topics)}
        self.offsets: list[int] = []
        total = 0
        for count in self.counts:
            self.offsets.append(total)
            total += count
        self.size = total
        self._topic_at: list[str] | None = None
        self._number_at: list[int] | None = None
        self._topic_id_at: list[int] | None = None

    def indices_of(self, topic: str, partitions: Sequence[int]) -> list[int]:
        """The numbers of a topic's partitions; unknown topics and partitions
        out of range are left out."""
        tid = self.topic_id.get(topic)
        if tid is None or not partitions:
            return []
        offset, count = self.offsets[tid], self.counts[tid]
        if min(partitions) >= 0 and max(partitions) < count:
            return list(map(offset.__add__, partitions))
        return [offset + p for p in partitions if 0 <= p < count]

    def indices_of_partitions(self, partitions: Iterable[TopicPartition]) -> list[int]:
        topic_id, offsets, counts = self.topic_id, self.offsets, self.counts
        indices = []
        for topic, partition in partitions:
            tid = topic_id.get(topic)
            if tid is not None and 0 <= partition < counts[tid]:
                indices.append(offsets[tid] + partition)
        return indices

    def first_numbers_by_utf8_name(self) -> dict[bytes, tuple[int, int]]:
        """(first partition number, partition count) of each topic, keyed by
        its name as UTF-8, for reading names straight from the wire."""
        return {
            t.encode(): (offset, count)
            for t, offset, count in zip(self.topics, self.offsets, self.counts, strict=True)
        }

    def topic_ids(self) -> list[int]:
        """The topic id (position in ``topics``) of every partition number."""
        if self._topic_id_at is None:
            self._topic_id_at = list(
                chain.from_iterable(repeat(t, n) for t, n in enumerate(self.counts))
            )
        return self._topic_id_at

    def topic_names(self) -> list[str]:
        """The topic of every partition number."""
        if self._topic_at is None:
            self._topic_at = list(
                chain.from_iterable(
                    repeat(t, n) for t, n in zip(self.topics, self.counts, strict=True)
                )
            )
        return self._topic_at

    def partition_numbers(self) -> list[int]:
        """The partition (within its topic) of every partition number."""
        if self._number_at is None:
            self._number_at = list(chain.from_iterable(range(n) for n in self.counts))
        return self._number_at

    def partitions(self, indices: Iterable[int]) -> list[TopicPartition]:
        indices = list(indices)
        return list(
            map(
                TopicPartition,
                map(self.topic_names().__getitem__, indices),
                map(self.partition_numbers().__getitem__, indices),
            )
        )
