"""In a cluster too, `__consumer_offsets` and `__transaction_state` belong to
the brokers: a client cannot create them with its own settings nor delete
them, and Metadata auto-creation makes them with the brokers' settings."""

from __future__ import annotations

from pathlib import Path

from cluster_brokers import running_cluster
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from topic_admin_wire import create, delete, described, topic_configs

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8
from kgroups.topics.placement import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

from raw_wire import call_once

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


def test_brokers_creating_an_internal_topic_together_agree_on_its_id(
    tmp_path: Path, store_url: str
) -> None:
    """The second broker to look for a transaction coordinator finds
    `__transaction_state` made by the first: it takes the store's topic, with
    its id, rather than its own plan."""
    with running_cluster(
        tmp_path, store_url, 2, f"transaction.state.log.num.partitions={PARTITIONS}"
    ) as brokers:
        for broker in brokers:  # the second asks before its next read of the store
            call_once(broker.port, FindCoordinatorRequest(key_type=i8(1), coordinator_keys=("t",)))
        ids = [described(b.port, TRANSACTION_STATE_TOPIC).topic_id for b in brokers]
        assert ids[0] == ids[1]
        assert "was deleted" not in brokers[1].log_path.read_text()
