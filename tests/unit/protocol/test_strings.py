"""Values the broker makes up fit the strings of every protocol version."""

from __future__ import annotations

from kgroups.coordinator.member import kafka_member_id
from kgroups.protocol.strings import MAX_STRING_BYTES, fit


def test_a_short_value_is_kept() -> None:
    assert fit("consumer-1") == "consumer-1"
    assert fit("é" * 100) == "é" * 100


def test_a_long_value_is_cut_at_a_character_boundary() -> None:
    cut = fit("é" * MAX_STRING_BYTES)  # two bytes each
    assert len(cut.encode()) == MAX_STRING_BYTES - 1 and set(cut) == {"é"}


def test_a_member_id_of_the_longest_client_id_fits() -> None:
    member_id = kafka_member_id("c" * MAX_STRING_BYTES)
    assert len(member_id.encode()) == MAX_STRING_BYTES
    assert member_id.startswith("c" * 32730) and member_id[-37] == "-"
