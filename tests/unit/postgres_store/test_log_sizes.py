"""The name the store goes by as a cluster broker's log directory: where the
data is, never the credentials or options of the URL."""

from __future__ import annotations

import pytest

from kgroups.postgres_store.log_sizes import store_log_dir


@pytest.mark.parametrize(
    ("url", "name"),
    [
        (
            "postgresql://kgroups:secret@db.example:5433/kafka?sslmode=require",
            "postgresql://db.example:5433/kafka",
        ),
        ("postgresql://u@127.0.0.1/k", "postgresql://127.0.0.1/k"),
        ("host=db port=5432 dbname=k user=u password=p", "postgresql://db:5432/k"),
        ("postgresql:///k?host=/run/postgresql", "postgresql:///run/postgresql/k"),
    ],
)
def test_the_store_is_named_without_credentials(url: str, name: str) -> None:
    assert store_log_dir(url) == name
