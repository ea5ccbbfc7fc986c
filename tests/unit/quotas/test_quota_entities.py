"""The entities a quota may be set on, the keys and values each takes, and
which entities a DescribeClientQuotas filter matches."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.quotas.entities import check_entity, check_value, decode_entity, encode_entity
from kgroups.quotas.filters import MATCH_ANY, MATCH_DEFAULT, MATCH_EXACT, Component, matching


@pytest.mark.parametrize(
    "parts",
    [
        [("user", "alice")],
        [("user", None)],
        [("client-id", "app"), ("user", "alice")],
        [("user", None), ("client-id", None)],
        [("client-id", "app")],
        [("ip", "10.0.0.1")],
        [("ip", "::1")],
        [("ip", None)],
    ],
)
def test_valid_entities(parts: list[tuple[str, str | None]]) -> None:
    entity = check_entity(parts)
    assert decode_entity(encode_entity(entity)) == entity


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([], "Invalid empty client quota entity"),
        ([("ip", "10.0.0.1"), ("user", "alice")], "Invalid empty client quota entity"),
        ([("ip", None), ("client-id", "x")], "Invalid empty client quota entity"),
        ([("user", "a"), ("user", "b")], "duplicate entity entry user"),
        ([("group", "g")], "Unhandled client quota entity type: group"),
        ([("user", "")], "Empty user not supported"),
        ([("ip", "not-an-address")], "not-an-address is not a valid IP."),
    ],
)
def test_invalid_entities(parts: list[tuple[str, str | None]], message: str) -> None:
    with pytest.raises(KafkaError) as e:
        check_entity(parts)
    assert e.value.error_code == ErrorCode.invalid_request
    assert message in str(e.value.message)


def test_keys_and_values_by_entity() -> None:
    user = check_entity([("user", "alice")])
    ip = check_entity([("ip", "10.0.0.1")])
    check_value(user, "producer_byte_rate", 1048576.0)
    check_value(user, "request_percentage", 12.5)
    check_value(ip, "connection_creation_rate", 10.0)
    for entity, key, value, message in (
        (user, "connection_creation_rate", 1.0, "Invalid configuration key"),
        (ip, "producer_byte_rate", 1.0, "Invalid configuration key"),
        (user, "producer_byte_rate", 1.5, "must be a Long value"),
        (ip, "connection_creation_rate", 0.5, "must be an Int value"),
        (user, "consumer_byte_rate", -1.0, "must not be negative"),
        (user, "bogus", 1.0, "Invalid configuration key bogus"),
    ):
        with pytest.raises(KafkaError) as e:
            check_value(entity, key, value)
        assert e.value.error_code == ErrorCode.invalid_request
        assert message in str(e.value.message)


ALICE = (("user", "alice"),)
ALICE_APP = (("client-id", "app"), ("user", "alice"))
DEFAULT_USER = (("user", None),)
APP = (("client-id", "app"),)
IP = (("ip", "10.0.0.1"),)
EVERY = [ALICE, ALICE_APP, DEFAULT_USER, APP, IP]


@pytest.mark.parametrize(
    ("components", "strict", "expected"),
    [
        ([], False, EVERY),
        ([], True, []),
        ([("user", MATCH_EXACT, "alice")], False, [ALICE, ALICE_APP]),
        ([("user", MATCH_EXACT, "alice")], True, [ALICE]),
        ([("user", MATCH_DEFAULT, None)], False, [DEFAULT_USER]),
        ([("user", MATCH_ANY, None)], False, [ALICE, ALICE_APP, DEFAULT_USER]),
        ([("user", MATCH_ANY, None), ("client-id", MATCH_ANY, None)], True, [ALICE_APP]),
        ([("client-id", MATCH_EXACT, "app")], True, [APP]),
        ([("ip", MATCH_ANY, None)], False, [IP]),
    ],
)
def test_describe_filters(
    components: list[tuple[str, int, str | None]], strict: bool, expected: list[object]
) -> None:
    found = matching(EVERY, [Component(*c) for c in components], strict)
    assert found == expected


@pytest.mark.parametrize(
    ("components", "code"),
    [
        ([("ip", MATCH_ANY, None), ("user", MATCH_ANY, None)], ErrorCode.invalid_request),
        ([("user", MATCH_EXACT, None)], ErrorCode.invalid_request),
        ([("user", MATCH_DEFAULT, "x")], ErrorCode.invalid_request),
        ([("user", MATCH_ANY, "x")], ErrorCode.invalid_request),
        ([("user", 7, None)], ErrorCode.invalid_request),
        ([("user", MATCH_ANY, None), ("user", MATCH_ANY, None)], ErrorCode.invalid_request),
        ([("", MATCH_ANY, None)], ErrorCode.invalid_request),
        ([("group", MATCH_ANY, None)], ErrorCode.unsupported_version),
    ],
)
def test_bad_filters(components: list[tuple[str, int, str | None]], code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as e:
        matching(EVERY, [Component(*c) for c in components], False)
    assert e.value.error_code == code
