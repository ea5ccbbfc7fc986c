"""Finding a server-side assignor by the name a member asks for."""

from __future__ import annotations

import pytest

from kgroups.coordinator.consumer_assignors import (
    ASSIGNORS_CONFIG,
    DEFAULT_ASSIGNORS,
    RangeAssignor,
    UniformAssignor,
    UnsupportedAssignor,
    assignor,
    assignors,
)


def test_kafkas_config_name_and_default() -> None:
    assert ASSIGNORS_CONFIG == "group.consumer.assignors"
    assert DEFAULT_ASSIGNORS == "uniform,range"
    assert list(assignors()) == ["uniform", "range"]


def test_no_name_means_the_default_uniform() -> None:
    assert isinstance(assignor(None), UniformAssignor)
    assert isinstance(assignor(""), UniformAssignor)


def test_members_pick_an_assignor_by_name() -> None:
    assert isinstance(assignor("uniform"), UniformAssignor)
    assert isinstance(assignor("range"), RangeAssignor)


def test_an_unknown_name_is_unsupported() -> None:
    with pytest.raises(UnsupportedAssignor, match="sticky") as raised:
        assignor("sticky")
    assert raised.value.name == "sticky"


def test_only_the_configured_assignors_are_offered_the_first_being_the_default() -> None:
    offered = assignors(" range ")
    assert isinstance(assignor(None, offered), RangeAssignor)
    with pytest.raises(UnsupportedAssignor):
        assignor("uniform", offered)


def test_a_config_naming_an_unknown_assignor_is_rejected() -> None:
    with pytest.raises(UnsupportedAssignor):
        assignors("uniform,cooperative-sticky")
    with pytest.raises(ValueError, match=ASSIGNORS_CONFIG):
        assignors(" , ")
