"""`kgroups users` on a stopped broker's data directory: the users it adds
log in once the broker starts; deleted users no longer do."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from sasl_fixtures import confluent_config, sasl_broker

from kgroups.cli import main


def test_users_added_offline_log_in_and_deleted_ones_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    d = ["--data-dir", str(data)]
    assert (
        main(["users", "add", "frank", "--password", "frank-pw", "--iterations", "8192", *d]) == 0
    )
    assert (
        main(["users", "add", "gina", "--password", "gina-pw", "--mechanism", "SCRAM-SHA-512", *d])
        == 0
    )
    assert main(["users", "list", *d]) == 0
    out = capsys.readouterr().out
    assert "frank\tSCRAM-SHA-256 (iterations=8192), SCRAM-SHA-512 (iterations=8192)" in out
    assert "gina\tSCRAM-SHA-512 (iterations=4096)" in out
    assert "frank-pw" not in (data / "scram-credentials.json").read_text()
    assert main(["users", "delete", "gina", *d]) == 0
    assert main(["users", "delete", "gina", *d]) == 1  # nothing left to delete
    assert main(["users", "add", "x", "--password", "p", "--iterations", "100", *d]) == 1

    b = sasl_broker(data).start()
    try:
        frank = confluent_config(b.bootstrap, "SCRAM-SHA-256", "frank", "frank-pw")
        assert AdminClient(frank).list_topics(timeout=30).brokers
        gina = confluent_config(b.bootstrap, "SCRAM-SHA-512", "gina", "gina-pw")
        with pytest.raises(KafkaException):
            AdminClient(gina).list_topics(timeout=5)
    finally:
        b.stop()
