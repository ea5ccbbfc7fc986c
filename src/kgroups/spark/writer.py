"""Writing rows to topics: ``df.write.format("kgroups")`` and ``writeStream``.

Rows have the columns of Spark's Kafka sink: ``value`` (required), ``key``,
``topic`` (or the ``topic`` option, which wins), ``partition`` and ``headers``;
key and value may be binary or string. Each task sends its rows through one
kgroups Producer (idempotent by default: retries inside the task never
duplicate) and fails unless every record was acknowledged.

Delivery is at least once. Idempotence holds within one producer session, and
a task that Spark runs again -- a retried task, a micro-batch replayed after a
failure -- starts a new one, so what the failed attempt had already written is
written again.

With ``kgroups.transactional=true`` each task writes in a transaction that the
driver commits once every task succeeded (``prepared_transactions``): for
read_committed consumers a write or a micro-batch appears whole or not at all,
and a retried task's earlier attempt is aborted, not duplicated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from kgroups.client.producer import Producer
from kgroups.spark.options import OptionError, WriteOptions
from kgroups.spark.prepared_transactions import PreparedTransaction, end_transactions

if TYPE_CHECKING:
    import pyarrow as pa

    from kgroups.client.delivery import DeliveryFuture

__all__ = ["KafkaBatchWriter", "KafkaStreamWriter", "check_write_schema"]

_TEXT_OR_BYTES = (StringType, BinaryType)


@dataclass
class Written(WriterCommitMessage):
    records: int
    transaction: PreparedTransaction | None = None
    """The task's open transaction, for the driver to commit (kgroups.transactional)."""


def check_write_schema(schema: StructType, options: WriteOptions) -> None:
    """Reject, before any task starts, rows the sink could not send."""
    fields = {f.name: f.dataType for f in schema.fields}

    def expect(name: str, ok: bool, what: str) -> None:
        if not ok:
            raise OptionError(name, f"column must be {what}, not {fields[name].simpleString()}")

    if "value" not in fields:
        raise OptionError("value", "column is required to write to a topic")
    expect("value", isinstance(fields["value"], _TEXT_OR_BYTES), "string or binary")
    if "key" in fields:
        expect("key", isinstance(fields["key"], _TEXT_OR_BYTES), "string or binary")
    if "topic" in fields:
        expect("topic", isinstance(fields["topic"], StringType), "string")
    elif options.topic is None:
        raise OptionError("topic", "is required: give option 'topic' or a 'topic' column")
    if "partition" in fields:
        expect("partition", isinstance(fields["partition"], IntegerType), "int")
    if "headers" in fields:
        expect("headers", _is_headers(fields["headers"]), "array<struct<key:string,value:binary>>")


def _is_headers(dtype: DataType) -> bool:
    if not isinstance(dtype, ArrayType) or not isinstance(dtype.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in dtype.elementType.fields}
    return isinstance(inner.get("key"), StringType) and isinstance(
        inner.get("value"), _TEXT_OR_BYTES
    )


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def write_batches(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> Written:
    """Send every row, wait for all acknowledgements; raise the first failure."""
    failures: list[BaseException] = []

    def check(future: DeliveryFuture) -> None:
        error = future.exception(0)
        if error is not None and not failures:
            failures.append(error)

    config = options.producer_config()
    transactional_id = None
    if options.transactional_id_prefix is not None:
        # The same id for every attempt of this partition: a retry fences the last one.
        transactional_id = f"{options.transactional_id_prefix}-{_partition_id()}"
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    count = 0
    prepared = None
    try:
        if transactional_id is not None:
            producer.init_transactions()
            producer.begin_transaction()
        for batch in batches:
            columns = batch.to_pydict()
            n = batch.num_rows
            values = columns["value"]
            keys = columns.get("key") or [None] * n
            topics = [options.topic] * n if options.topic else columns["topic"]
            partitions = columns.get("partition") or [None] * n
            headers = columns.get("headers") or [None] * n
            for i in range(n):
                topic = topics[i]
                if topic is None:
                    raise ValueError("a row has a null topic and no 'topic' option is given")
                row_headers = headers[i]
                future = producer.send(
                    topic,
                    _as_bytes(values[i]),
                    key=_as_bytes(keys[i]),
                    headers=None
                    if not row_headers
                    else [(h["key"], _as_bytes(h["value"])) for h in row_headers],
                    partition=partitions[i],
                )
                future.add_done_callback(check)
            count += n
            if failures:
                break
        producer.flush()
        if transactional_id is not None and not failures and producer.transaction_started:
            # Left open on purpose: the driver commits it with the others.
            producer_id, epoch = producer.producer_identity
            prepared = PreparedTransaction(transactional_id, producer_id, epoch)
    finally:
        if transactional_id is not None and prepared is None:
            # Best effort: a retry of this task would abort it anyway (fencing).
            with contextlib.suppress(Exception):
                producer.abort_transaction(5)
        producer.close()
    if failures:
        raise failures[0]
    return Written(count, prepared)


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("a transactional write runs in a Spark task")
    return context.partitionId()


def _prepared(messages: list[WriterCommitMessage | None]) -> list[PreparedTransaction]:
    return [m.transaction for m in messages if isinstance(m, Written) and m.transaction is not None]


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        end_transactions(self.options, _prepared(messages), commit=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        end_transactions(self.options, _prepared(messages), commit=False)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are acknowledged by the time each task ends; with
        kgroups.transactional the micro-batch's transactions commit now."""
        end_transactions(self.options, _prepared(messages), commit=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Sent records cannot be taken back (a replay sends them again), unless
        they are in transactions: those are aborted."""
        end_transactions(self.options, _prepared(messages), commit=False)
