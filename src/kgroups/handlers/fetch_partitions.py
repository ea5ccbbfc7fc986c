"""The partitions a Fetch asks for, each once.

Kafka reads a Fetch into a map keyed by partition (FetchRequest.fetchData, a
LinkedHashMap): a partition named twice is fetched once, with what its last
mention asks, in the place of its first; the response puts consecutive
partitions of one topic under one topic entry, and a topic entry without
partitions gets none. Without this a request naming one partition a thousand
times would be answered a thousand times.
"""

from __future__ import annotations

import dataclasses

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic


def distinct_partitions(request: FetchRequest) -> FetchRequest:
    if _already_distinct(request.topics):
        return request
    wanted: dict[tuple[str, int], tuple[FetchTopic, FetchPartition]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            key = (topic.topic, p.partition)
            # A dict keeps a key where it was first put and takes the last value.
            wanted[key] = (wanted[key][0] if key in wanted else topic, p)
    grouped: list[tuple[FetchTopic, list[FetchPartition]]] = []
    for topic, p in wanted.values():
        if grouped and grouped[-1][0].topic == topic.topic:
            grouped[-1][1].append(p)
        else:
            grouped.append((topic, [p]))
    topics = tuple(dataclasses.replace(t, partitions=tuple(ps)) for t, ps in grouped)
    return dataclasses.replace(request, topics=topics)


def _already_distinct(topics: tuple[FetchTopic, ...]) -> bool:
    seen: set[tuple[str, int]] = set()
    previous = None
    for topic in topics:
        if not topic.partitions or topic.topic == previous:
            return False
        previous = topic.topic
        for p in topic.partitions:
            key = (topic.topic, p.partition)
            if key in seen:
                return False
            seen.add(key)
    return True
