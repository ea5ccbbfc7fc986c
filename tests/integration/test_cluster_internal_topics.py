"""In a cluster too, `__consumer_offsets` and `__transaction_state` belong to
the brokers: a client cannot create them with its own settings nor delete
them, and Metadata auto-creation makes them with the brokers' settings."""

from __future__ import annotations

from pathlib import Path

from cluster_brokers import running_cluster
from topic_admin_wire import create, delete, described, topic_configs

from kgroups.errors import ErrorCode
from kgroups.topics.placement import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

PARTITIONS = 3


def test_clients_cannot_create_or_delete_the_internal_topics(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(
        tmp_path,
        store_url,
        1,
        f"offsets.topic.num.partitions={PARTITIONS}",
        f"transaction.state.log.num.partitions={PARTITIONS}",
    ) as (broker,):
        port = broker.port
        for name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
            refused = create(port, name, 1, cleanup_policy="delete", retention_ms="1000")
            assert (name, refused.error_code) == (name, ErrorCode.invalid_request)
            assert described(port, name).error_code == ErrorCode.unknown_topic_or_partition

            made = described(port, name, auto_create=True)
            assert (name, made.error_code) == (name, ErrorCode.none)
            assert made.is_internal
            assert len(made.partitions) == PARTITIONS
            configs = topic_configs(port, name)
            assert configs["cleanup.policy"] == "compact"
            assert configs["segment.bytes"] == "104857600"

            assert delete(port, name) == [ErrorCode.invalid_topic_exception] * 2
            again = create(port, name, 1, cleanup_policy="delete")
            assert again.error_code == ErrorCode.topic_already_exists
            assert len(described(port, name).partitions) == PARTITIONS
