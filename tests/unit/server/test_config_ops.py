"""IncrementalAlterConfigs' operations on a resource's overrides (KIP-339),
as Kafka's controller applies them, and `kgroups configs`' key=value lists."""

from __future__ import annotations

import pytest

from kgroups.commands.configs import parse_pairs
from kgroups.commands.usage import UsageError
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.config_ops import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    ConfigOp,
    apply_ops,
    check_ops,
)

LISTS = frozenset({"cleanup.policy"})
EFFECTIVE = {"cleanup.policy": "delete", "retention.ms": "604800000"}


def test_set_delete_append_subtract() -> None:
    ops = [
        ConfigOp("retention.ms", SET, "1000"),
        ConfigOp("segment.ms", DELETE, None),
        ConfigOp("cleanup.policy", APPEND, "compact,delete"),
    ]
    got = apply_ops({"segment.ms": "5"}, EFFECTIVE, ops, LISTS)
    assert got == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    got = apply_ops(got, EFFECTIVE, [ConfigOp("cleanup.policy", SUBTRACT, "delete")], LISTS)
    assert got["cleanup.policy"] == "compact"
    # DELETE of a key not set is no error, as in Kafka.
    assert apply_ops({}, EFFECTIVE, [ConfigOp("x", DELETE, None)], LISTS) == {}


def test_append_to_a_scalar_is_invalid_config() -> None:
    with pytest.raises(KafkaError) as e:
        apply_ops({}, EFFECTIVE, [ConfigOp("retention.ms", SUBTRACT, "1")], LISTS)
    assert e.value.error_code == ErrorCode.invalid_config
    assert e.value.message == "Can't SUBTRACT to key retention.ms because its type is not LIST."


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([ConfigOp("a", SET, "1"), ConfigOp("a", SET, "2")], "Error due to duplicate config keys"),
        (
            [ConfigOp("a", SET, None), ConfigOp("b", APPEND, None)],
            "Null value not supported for : a, b",
        ),
        ([ConfigOp("a", 4, "1")], "Unknown operation type 4"),
    ],
)
def test_refused_before_any_resource_looks(ops: list[ConfigOp], message: str) -> None:
    with pytest.raises(KafkaError) as e:
        check_ops(ops)
    assert (e.value.error_code, e.value.message) == (ErrorCode.invalid_request, message)


def test_key_value_lists_as_kafka_configs_writes_them() -> None:
    assert parse_pairs("a=1,b=[x,y],c=", "--add-config") == [("a", "1"), ("b", "x,y"), ("c", "")]
    with pytest.raises(UsageError):
        parse_pairs("a=1,b", "--add-config")
