"""Ending the transactions that the sink's tasks leave open, from the driver.

With ``kgroups.transactional`` each task writes its rows in a transaction of its
own (transactional.id: the write's prefix and the task's partition), flushes, and
ends without committing: its commit message names the transaction -- id,
producer id and epoch. Once every task has succeeded Spark calls the writer's
commit on the driver, which sends EndTxn(commit) for each of them; if the job
fails, abort sends EndTxn(abort) for those that reported. A retried task starts
with InitProducerId for the same transactional.id, which aborts (fences) what
its failed attempt had written, and its epoch bump makes any stale message of
that attempt fail at commit instead of committing twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgroups.client.cluster import ClusterClient
from kgroups.client.coordinator_link import open_connection
from kgroups.client.idempotence import IdempotenceState
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.transaction_manager import TransactionManager
from kgroups.client.transaction_requests import TransactionRequests
from kgroups.spark.options import WriteOptions

__all__ = ["PreparedTransaction", "end_transactions"]


@dataclass(frozen=True)
class PreparedTransaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int


def end_transactions(
    options: WriteOptions, prepared: Sequence[PreparedTransaction], commit: bool
) -> None:
    """Commit (or abort) every prepared transaction; raises if any cannot be --
    a task's transaction that timed out or was fenced fails the write."""
    if prepared:
        asyncio.run(_end_all(options, prepared, commit))


async def _end_all(
    options: WriteOptions, prepared: Sequence[PreparedTransaction], commit: bool
) -> None:
    config = ProducerConfig.from_dict(
        {**options.producer_config(), "transactional.id": prepared[0].transactional_id}
    )
    cluster = ClusterClient(config.bootstrap_servers, config.client_id, config.security)

    async def connect(host: str, port: int) -> Any:
        return await open_connection(host, port, config.client_id, config.security)

    async def end(txn: PreparedTransaction) -> None:
        idempotence = IdempotenceState()
        idempotence.set_producer(txn.producer_id, txn.producer_epoch)
        manager = TransactionManager(txn.transactional_id, config.transaction_timeout_ms)
        requests = TransactionRequests(config, manager, idempotence, cluster, connect)
        try:
            await requests.end_txn(commit, time.monotonic() + config.max_block_ms / 1000)
        finally:
            await requests.close()

    try:
        results = await asyncio.gather(*(end(t) for t in prepared), return_exceptions=True)
    finally:
        await cluster.close()
    for result in results:
        if isinstance(result, BaseException):
            raise result
