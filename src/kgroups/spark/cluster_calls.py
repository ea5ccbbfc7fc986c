"""The driver side's calls to the cluster, blocking: which partitions a selection
names, their offsets (earliest, latest, by time) and commits to a group.

Spark calls a source's planning methods from a Python process of its own, one
method at a time; these run the async client on an event loop thread so that a
long-lived stream reader keeps its connections from trigger to trigger. The
object holds no connection until first used and drops them when pickled.
"""

from __future__ import annotations

import re
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from kgroups.client.admin import Admin
from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.loop_thread import LoopThread
from kgroups.client.offset_lookup import list_offsets
from kgroups.client.security import ClientSecurity
from kgroups.errors import ErrorCode, KafkaError
from kgroups.spark.offset_spec import LATEST, Offsets
from kgroups.spark.options import TopicSelection

__all__ = ["ClusterCalls"]

T = TypeVar("T")
_TIMEOUT = 60.0


class ClusterCalls:
    def __init__(
        self,
        bootstrap: str,
        *,
        read_committed: bool = False,
        security_keys: Mapping[str, str] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.read_committed = read_committed
        self.security_keys = dict(security_keys or {})
        """security.protocol, ssl.*, sasl.*: they travel pickled, the TLS context they
        make does not, so it is built where the connections open."""
        self._thread: LoopThread | None = None
        self._admin: Admin | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "bootstrap": self.bootstrap,
            "read_committed": self.read_committed,
            "security_keys": self.security_keys,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["bootstrap"],
            read_committed=state["read_committed"],
            security_keys=state["security_keys"],
        )

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._thread is None:
            security = ClientSecurity.from_config(self.security_keys)
            self._thread = LoopThread("kgroups-spark-driver")

            async def create() -> Admin:
                cluster = ClusterClient(self.bootstrap, "kgroups-spark", security)
                return Admin(self.bootstrap, cluster)

            self._admin = self._thread.call(create())
        return self._thread.call(coro)

    @property
    def _cluster(self) -> ClusterClient:
        assert self._admin is not None
        return self._admin.cluster

    def partitions(self, selection: TopicSelection) -> list[tuple[str, int]]:
        """The partitions the selection names now, sorted."""
        return self._run(self._partitions(selection))

    async def _partitions(self, selection: TopicSelection) -> list[tuple[str, int]]:
        cluster = self._cluster
        if selection.assigned:
            await cluster.refresh(sorted({t for t, _ in selection.assigned}))
            for topic, partition in selection.assigned:
                info = cluster.metadata.topics.get(topic)
                if info is None or partition not in info.partitions:
                    raise KafkaError(
                        ErrorCode.unknown_topic_or_partition,
                        f"assign names {topic}-{partition}, which does not exist",
                    )
            return sorted(selection.assigned)
        if selection.pattern is not None:
            await cluster.refresh(None)
            pattern = re.compile(selection.pattern)
            return sorted(
                (name, p)
                for name, info in cluster.metadata.topics.items()
                if not info.internal and info.error == ErrorCode.none and pattern.fullmatch(name)
                for p in info.partitions
            )
        await cluster.refresh(list(selection.topics))
        out: list[tuple[str, int]] = []
        for topic in selection.topics:
            info = cluster.metadata.topics.get(topic)
            if info is None or info.error != ErrorCode.none:
                error = info.error if info else ErrorCode.unknown_topic_or_partition
                raise KafkaError(error, f"subscribed topic {topic!r} does not exist")
            out.extend((topic, p) for p in info.partitions)
        return sorted(out)

    def topic_names(self) -> dict[str, str]:
        """Every topic's name by its id (as text), for records that name topics by id."""
        return self._run(self._topic_names())

    async def _topic_names(self) -> dict[str, str]:
        await self._cluster.refresh(None)
        return {
            str(info.topic_id): name
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }

    def offsets(self, wanted: Mapping[tuple[str, int], int]) -> Offsets:
        """The offset of each partition at -2 (earliest), -1 (latest) or a timestamp;
        a timestamp later than every record gives the latest offset."""
        if not wanted:
            return {}
        return self._run(self._offsets(wanted))

    async def _offsets(self, wanted: Mapping[tuple[str, int], int]) -> Offsets:
        found = await list_offsets(
            self._cluster,
            {TopicPartition(t, p): ts for (t, p), ts in wanted.items()},
            read_committed=self.read_committed,
            request_timeout=30.0,
            retry_backoff=0.2,
            deadline=time.monotonic() + _TIMEOUT,
        )
        out = {(tp.topic, tp.partition): offset for tp, offset in found.items()}
        missing = [tp for tp, offset in out.items() if offset < 0]
        if missing:
            latest = await self._offsets({tp: LATEST for tp in missing})
            out.update(latest)
        return out

    def commit(self, group: str, offsets: Offsets) -> None:
        """A standalone commit of ``offsets`` to ``group``."""
        if offsets:
            self._run(self._commit(group, offsets))

    async def _commit(self, group: str, offsets: Offsets) -> None:
        assert self._admin is not None
        await self._admin.commit(group, dict(offsets))

    def committed(self, group: str) -> Offsets:
        return self._run(self._committed(group))

    async def _committed(self, group: str) -> Offsets:
        assert self._admin is not None
        return await self._admin.committed(group)

    def close(self) -> None:
        if self._thread is None:
            return
        if self._admin is not None:
            self._thread.call(self._admin.close())
        self._thread.stop()
        self._thread = None
        self._admin = None

    def __enter__(self) -> ClusterCalls:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
