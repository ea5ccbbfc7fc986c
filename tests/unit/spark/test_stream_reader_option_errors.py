"""A streaming read with a bad option: Spark's source process builds the reader,
calls it, and stops it in a ``finally``; only the option error may come out."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from kgroups.spark.options import OptionError
from kgroups.spark.schema import kafka_schema
from kgroups.spark.source import KafkaDataSource


def _run_like_spark(options: dict[str, str]) -> None:
    # As Spark's streaming source process does: build, call, and stop in a finally.
    try:
        reader = KafkaDataSource(options).streamReader(kafka_schema(False))
        reader.getDefaultReadLimit()
        reader.initialOffset()
    finally:
        reader.stop()


def test_a_bad_stream_option_is_the_only_error() -> None:
    options = {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "subscribe": "t",
        "endingOffsets": "latest",
    }
    with pytest.raises(OptionError, match=r"option 'endingOffsets'") as raised:
        _run_like_spark(options)
    assert raised.value.__context__ is None


def test_a_missing_option_is_the_only_error() -> None:
    with pytest.raises(OptionError, match=r"option 'kafka\.bootstrap\.servers'") as raised:
        _run_like_spark({"subscribe": "t"})
    assert raised.value.__context__ is None
