"""Printed options never show a SASL password."""

from __future__ import annotations

from kgroups.spark.options import ReadOptions, WriteOptions

SECURED = {
    "kafka.bootstrap.servers": "127.0.0.1:9093",
    "kafka.security.protocol": "SASL_PLAINTEXT",
    "kafka.sasl.mechanism": "PLAIN",
    "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
    'required username="alice" password="alice-secret";',
}


def test_read_and_write_options_keep_the_password_out_of_their_repr() -> None:
    read = ReadOptions.parse({**SECURED, "subscribe": "orders"}, streaming=False)
    write = WriteOptions.parse({**SECURED, "topic": "orders"})
    assert read.consumer["sasl.jaas.config"].endswith('password="alice-secret";')
    assert "alice-secret" not in repr(read)
    assert "alice-secret" not in repr(write)
