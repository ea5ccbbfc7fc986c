"""The answer for the topics a guard refuses, in the shape ListOffsets and
OffsetDelete share: each topic by ``name``, each of its ``partitions`` by
``partition_index`` with TOPIC_AUTHORIZATION_FAILED, as the request named them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kgroups.errors import ErrorCode

T = TypeVar("T")


def partitions_refused(
    topic_type: Callable[..., T], partition_type: Callable[..., object]
) -> Callable[[Sequence[Any]], tuple[T, ...]]:
    """The refusal builder of a response whose topics are ``topic_type`` and
    partitions ``partition_type``."""

    def refused(topics: Sequence[Any]) -> tuple[T, ...]:
        return tuple(
            topic_type(
                name=t.name,
                partitions=tuple(
                    partition_type(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.topic_authorization_failed,
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        )

    return refused
