"""Every exported metric is listed in docs/metrics.md, and every listed one exported."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kgroups.metrics.lag_exporter import LagExporter

from broker_thread import BrokerThread
from prometheus_text import Scrape, scrape

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"


def _documented() -> dict[str, str]:
    """Name -> type, from the tables' rows."""
    rows = re.findall(r"^\| `([a-z_]+)` \| (\w+) \|", DOC.read_text(), re.MULTILINE)
    return dict(rows)


def test_exported_names_are_the_documented_ones(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", metrics_port=0).start()
    try:
        assert b.broker is not None and b.broker.metrics is not None
        broker_types = scrape(b.broker.metrics.port).types
        exporter = LagExporter(b.bootstrap)
        try:
            _, _, body = b.run(exporter._metrics())
        finally:
            b.run(exporter.close())
    finally:
        b.stop()
    exporter_types = Scrape(body.decode()).types
    exported = broker_types | exporter_types
    assert exported == _documented()
    lag = {n for n in exported if n.startswith("kafka_consumergroup_group_")}
    assert lag <= broker_types.keys() and lag <= exporter_types.keys()


def test_the_dashboard_uses_documented_metrics_only() -> None:
    dashboard = json.loads((DOC.parent / "grafana" / "kgroups.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    documented = _documented()
    names = {n for e in exprs for n in re.findall(r"kafka_\w+", e)}
    # A summary's samples are its name with _sum and _count.
    used = {n if n in documented else re.sub(r"_(sum|count)$", "", n) for n in names}
    assert used and used <= documented.keys(), used - documented.keys()
    assert "kafka_consumergroup_group_lag_seconds" in used
    assert "kafka_network_requestmetrics_totaltimems" in used
