"""Arrays packed for the store writer read back by PostgreSQL as they were."""

from __future__ import annotations

import psycopg

from kgroups.postgres_store.binary_arrays import (
    bigint_array,
    bytea_array,
    int_array,
    smallint_array,
    text_array,
)


def test_each_array_type_reads_back_as_its_values(store_url: str) -> None:
    cases = [
        (bigint_array, "bigint", [0, -1, 2**63 - 1, -(2**63)]),
        (int_array, "int", [7, -(2**31), 2**31 - 1]),
        (smallint_array, "smallint", [1, -(2**15), 2**15 - 1]),
        (text_array, "text", ["__consumer_offsets", "t.é-ü_1", ""]),
        (bytea_array, "bytea", [b"", b"\x00\xff" * 3, b"x" * 100_000]),
    ]
    with psycopg.connect(store_url) as conn:
        for pack, sql_type, values in cases:
            for chosen in (values, values[:1], []):
                rows = conn.execute(
                    f"SELECT v FROM unnest(%b::{sql_type}[]) WITH ORDINALITY AS u(v, i) ORDER BY i",
                    [pack(chosen)],
                ).fetchall()
                assert [r[0] for r in rows] == chosen, (sql_type, chosen[:2])
