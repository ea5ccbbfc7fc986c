"""The sink's transactional options: one id prefix per write, made on the driver."""

from __future__ import annotations

import pytest

from kgroups.spark.options import OptionError, WriteOptions

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "t"}


def test_a_transactional_write_gets_one_prefix_for_all_its_tasks() -> None:
    assert WriteOptions.parse(BOOTSTRAP).transactional_id_prefix is None
    first = WriteOptions.parse({**BOOTSTRAP, "kgroups.transactional": "true"})
    second = WriteOptions.parse({**BOOTSTRAP, "kgroups.transactional": "true"})
    assert first.transactional_id_prefix and second.transactional_id_prefix
    assert first.transactional_id_prefix != second.transactional_id_prefix
    named = WriteOptions.parse(
        {**BOOTSTRAP, "kgroups.transactional": "true", "kgroups.transactional.id.prefix": "orders"}
    )
    assert named.transactional_id_prefix == "orders"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"kafka.transactional.id": "x"}, "kafka.transactional.id"),
        ({"kgroups.transactional.id.prefix": "x"}, "kgroups.transactional.id.prefix"),
        ({"kgroups.transactional": "yes"}, "kgroups.transactional"),
    ],
)
def test_misused_transactional_options_are_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=f"option '{named}'"):
        WriteOptions.parse({**BOOTSTRAP, **options})
