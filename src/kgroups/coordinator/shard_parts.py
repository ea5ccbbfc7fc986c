"""What a group coordinator shard is made of, built and wired once: the
classic groups' table and timers, their membership rules, the offsets
(committed, pending in transactions, removed), the KIP-848 consumer groups
with their classic-protocol members, and the topics they subscribe to.

The shard (shard_partition.py) and its helpers (call_journal.py,
consumer_side.py, due_operations.py, injected_faults.py) each take the parts
they need from one ShardParts.
"""

from __future__ import annotations

from collections.abc import Callable

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    TopicImage,
    TopicsView,
)
from kgroups.coordinator.consumer.classic_members import ClassicProtocolMembers
from kgroups.coordinator.consumer_messages import TopicNames
from kgroups.coordinator.delayed_operations import Timers
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import kafka_member_id
from kgroups.coordinator.membership import Membership
from kgroups.coordinator.offset_handlers import OffsetHandlers
from kgroups.coordinator.offset_removal import OffsetRemoval
from kgroups.coordinator.share import ShareEvents, ShareGroupConfig, ShareGroupCoordinator
from kgroups.coordinator.txn_batches import TxnBatches
from kgroups.coordinator.txn_offsets import TransactionalOffsets


class ShardParts:
    def __init__(
        self,
        config: CoordinatorConfig,
        partition_exists: Callable[[str, int], bool],
        new_member_id: Callable[[str], str] | None,
        consumer_config: ConsumerGroupConfig | None,
        topics: TopicsView | None,
        topic_name: TopicNames,
        share_config: ShareGroupConfig | None = None,
        share_events: ShareEvents | None = None,
    ) -> None:
        self.config = config
        self.table = table = GroupTable()
        self.timers = timers = Timers()
        self.membership = membership = Membership(
            table, timers, config, new_member_id or kafka_member_id
        )
        # Offsets committed inside transactions, pending until their marker.
        self.txn = txn = TransactionalOffsets()
        self.offsets = OffsetHandlers(table, membership, config, partition_exists, txn)
        self.removal = OffsetRemoval(table, config, txn)
        self.txn_batches = TxnBatches(txn, table)
        # KIP-848 consumer groups, beside the classic ones: a group id names
        # one or the other (a consumer group's offsets live in the classic
        # table, as those of a group without members).
        self.consumer = consumer = ConsumerGroupCoordinator(consumer_config)
        # Classic-protocol members inside consumer groups, and conversions (migration).
        self.classic_members = ClassicProtocolMembers(consumer, topic_name)
        # Share groups (KIP-932): a third kind of group id.
        self.share = ShareGroupCoordinator(share_config, share_events)
        self.topics: TopicsView = topics if topics is not None else TopicImage()
        self.topic_name = topic_name
