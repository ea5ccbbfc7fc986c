"""Finding assignors by protocol name, and what each says about itself."""

from __future__ import annotations

import pytest
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from kgroups.assignors import (
    Assignment,
    RebalanceProtocol,
    StickyAssignor,
    TopicPartition,
    UnknownAssignor,
    by_name,
)


@pytest.mark.parametrize(
    ("name", "protocols"),
    [
        ("range", (RebalanceProtocol.EAGER,)),
        ("roundrobin", (RebalanceProtocol.EAGER,)),
        ("sticky", (RebalanceProtocol.EAGER,)),
        ("cooperative-sticky", (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)),
    ],
)
def test_java_names_and_protocols(name: str, protocols: tuple[RebalanceProtocol, ...]) -> None:
    assignor = by_name(name)
    assert assignor.name == name
    assert assignor.supported_protocols == protocols


def test_each_lookup_is_a_fresh_assignor() -> None:
    assert by_name("sticky") is not by_name("sticky")


def test_unknown_names_are_refused() -> None:
    with pytest.raises(UnknownAssignor):
        by_name("uniform")


def test_range_and_roundrobin_send_no_user_data() -> None:
    for name in ("range", "roundrobin"):
        assert by_name(name).subscription_user_data({"t"}) is None


def test_sticky_member_sends_its_last_assignment() -> None:
    assignor = StickyAssignor()
    assert assignor.subscription_user_data({"t"}) is None
    assignor.on_assignment(Assignment([TopicPartition("t", 3), TopicPartition("u", 0)]), 8)
    data = assignor.subscription_user_data({"t", "u"})
    assert data is not None
    decoded = StickyAssignorUserData.decode(data, version=1, header=False)
    assert decoded.generation == 8
    assert [(tp.topic, list(tp.partitions)) for tp in decoded.previous_assignment] == [
        ("t", [3]),
        ("u", [0]),
    ]
