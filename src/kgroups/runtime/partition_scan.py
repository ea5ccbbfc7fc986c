"""Reading an internal topic's partition back into a coordinator: the newest
value of each key, in the order of their last appearance, and the records of
transactions whose marker has not come yet.

One pass from the log start to the end it had when the pass began, in chunks,
with a turn of the loop between chunks so other partitions' requests are
served meanwhile; batches a log no longer holds in memory (cluster mode) are
read through the partition home. Progress is logged every few seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time

from kgroups.coordinator.control_records import marker_commits
from kgroups.coordinator.txn_load import LoadedTransactions, OpenRecord
from kgroups.errors import KafkaError
from kgroups.partitions.home import PartitionHome
from kgroups.partitions.log import NotInMemory, PartitionRead
from kgroups.records.batch import decode_records, iter_batches, iter_key_values

__all__ = ["scan_partition"]

log = logging.getLogger(__name__)

# Records read per step while loading, between which the loop serves requests.
_LOAD_CHUNK_BYTES = 4 * 1024 * 1024
_PROGRESS_EVERY_S = 2.0


async def scan_partition(
    home: PartitionHome, topic: str, partition: int
) -> tuple[dict[bytes, bytes | None], int, list[OpenRecord]]:
    """The newest value of each key of the partition, in the order of their
    last appearance, how many keyed records were read, and the records of
    transactions without a marker yet (txn_load.py)."""
    started = time.monotonic()
    plog = home.log(topic, partition)
    offset, end = plog.log_start_offset, plog.log_end_offset
    latest: dict[bytes, bytes | None] = {}
    transactions = LoadedTransactions(latest)
    pending_keys = transactions.keys
    scanned = 0
    next_report = started + _PROGRESS_EVERY_S
    while offset < end:
        try:
            chunk = plog.read(offset, _LOAD_CHUNK_BYTES, max_offset=end)
        except NotInMemory:  # cluster mode: older batches are in the store
            chunk = await _read_from_home(home, topic, partition, offset)
        if not chunk:
            break
        for pos, header in iter_batches(chunk):
            if header.base_offset >= end:
                break
            if header.last_offset >= offset:
                batch = chunk[pos : pos + header.size]
                if header.is_control:
                    for record in decode_records(batch):
                        commit = None if record.key is None else marker_commits(record.key)
                        if commit is not None:
                            transactions.marker(header.producer_id, commit)
                elif header.is_transactional:
                    for key, value in iter_key_values(batch):
                        if key is not None:
                            transactions.record(header.producer_id, key, value)
                            scanned += 1
                else:
                    for key, value in iter_key_values(batch):
                        if key is not None:
                            if pending_keys and key in pending_keys:
                                transactions.plain(key, value)
                            latest.pop(key, None)
                            latest[key] = value
                            scanned += 1
            offset = header.last_offset + 1
        if time.monotonic() >= next_report:
            next_report += _PROGRESS_EVERY_S
            done = (offset - plog.log_start_offset) / max(1, end - plog.log_start_offset)
            log.info(
                "loading %s-%d: %.0f%% (%d records, %d live keys)",
                topic,
                partition,
                100 * done,
                scanned,
                len(latest),
            )
        await asyncio.sleep(0)  # serve other partitions' requests between chunks
    return latest, scanned, transactions.still_open()


async def _read_from_home(home: PartitionHome, topic: str, partition: int, offset: int) -> bytes:
    (got,) = await home.read_many([PartitionRead(topic, partition, offset, _LOAD_CHUNK_BYTES)])
    if isinstance(got, KafkaError):
        raise got
    return got
