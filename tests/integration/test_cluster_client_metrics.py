"""Client metrics subscriptions in a cluster (KIP-714): kept in the store,
so every broker lists them and serves them, and a push prepared by one
broker's answer is accepted by another."""

from __future__ import annotations

import uuid
from pathlib import Path

from cluster_brokers import running_cluster, wait_for
from config_admin_wire import DELETE, SET, configs, incremental
from kio.schema.list_config_resources.v0 import ListConfigResourcesRequest
from telemetry_client import Client

from kgroups.errors import ErrorCode

from raw_wire import call_once

CLIENT_METRICS = 16
CLIENT_METRICS_CONFIG = 7
ZERO = uuid.UUID(int=0)


def _listed(port: int) -> list[str]:
    return [r.resource_name for r in call_once(port, ListConfigResourcesRequest()).config_resources]


def test_a_subscription_reaches_every_broker(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        first, second = brokers[0].port, brokers[1].port
        ops = [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "800")]
        assert incremental(first, [(CLIENT_METRICS, "producers", ops)]) == [
            ("producers", ErrorCode.none, None)
        ]
        wait_for(lambda: _listed(second) == ["producers"])
        assert configs(second, CLIENT_METRICS, "producers") == {
            "interval.ms": ("800", CLIENT_METRICS_CONFIG),
            "metrics": ("org.apache.kafka.producer.", CLIENT_METRICS_CONFIG),
        }
        # Subscribed on one broker, pushing to the other: the same subscription id.
        asking, pushing = Client(first), Client(second)
        got = asking.get(ZERO)
        assert got.requested_metrics == ("org.apache.kafka.producer.",)
        pushing.instance, pushing.subscription = asking.instance, asking.subscription
        assert pushing.push(b"") == ErrorCode.none
        answer = Client(second).get(ZERO)
        assert answer.requested_metrics == ("org.apache.kafka.producer.",)
        assert answer.push_interval.total_seconds() == 0.8
        for client in (asking, pushing):
            client.close()

        assert incremental(second, [(CLIENT_METRICS, "producers", [("metrics", DELETE, None)])])
        assert incremental(second, [(CLIENT_METRICS, "producers", [("interval.ms", DELETE, None)])])
        wait_for(lambda: _listed(first) == [])
