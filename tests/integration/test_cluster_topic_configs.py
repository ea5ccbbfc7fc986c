"""Topic, group and broker configs changed in a cluster: kept in the store,
reported by every broker, and applied by the partition's leader at its next read of
the cluster, whichever broker took the request and without leadership moving."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import (
    EARLIEST,
    create_topic,
    leaders,
    list_offset,
    produce,
    running_cluster,
    wait_for,
)
from config_admin_wire import (
    APPEND,
    BROKER,
    DELETE,
    GROUP,
    SET,
    TOPIC,
    configs,
    incremental,
    legacy,
)

from kgroups.errors import ErrorCode

NONE = ErrorCode.none
DYNAMIC_TOPIC_CONFIG = 1
GROUP_CONFIG = 8


def test_changed_configs_reach_every_broker_and_the_leaders_log(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2, "log.retention.check.interval.ms=200") as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "t", 1) == NONE
        leader = leaders(ports[1], "t")[0]
        other = 3 - leader
        old = int(time.time() * 1000) - 60_000
        for value in (b"a", b"b", b"c"):
            assert produce(ports[leader], "t", 0, value, timestamp=old)[0] == NONE
        # Asked of the broker that does not lead the partition.
        ops = [("retention.ms", SET, "1000"), ("max.message.bytes", SET, "100")]
        assert incremental(ports[other], [(TOPIC, "t", ops)]) == [("t", NONE, None)]
        for port in ports.values():
            wait_for(lambda port=port: configs(port, TOPIC, "t")["retention.ms"][0] == "1000")
            assert configs(port, TOPIC, "t")["retention.ms"][1] == DYNAMIC_TOPIC_CONFIG
        wait_for(lambda: produce(ports[leader], "t", 0, b"x" * 300)[0] != NONE)
        assert produce(ports[leader], "t", 0, b"x" * 300)[0] == ErrorCode.message_too_large
        wait_for(lambda: list_offset(ports[leader], "t", 0, EARLIEST)[1] > 0)

        answers = incremental(
            ports[leader],
            [
                (
                    TOPIC,
                    "t",
                    [("cleanup.policy", APPEND, "compact"), ("retention.ms", DELETE, None)],
                ),
                (TOPIC, "missing", [("retention.ms", SET, "1")]),
            ],
        )
        assert answers == [
            ("t", NONE, None),
            ("missing", ErrorCode.unknown_topic_or_partition, "Topic missing does not exist."),
        ]
        now = configs(ports[leader], TOPIC, "t")
        assert now["cleanup.policy"] == ("delete,compact", DYNAMIC_TOPIC_CONFIG)
        assert now["retention.ms"][1] != DYNAMIC_TOPIC_CONFIG
        assert legacy(ports[other], [(TOPIC, "t", {"segment.ms": "60000"})]) == [("t", NONE, None)]
        wait_for(lambda: configs(ports[leader], TOPIC, "t")["segment.ms"][0] == "60000")
        now = configs(ports[leader], TOPIC, "t")
        assert now["cleanup.policy"] == ("delete", 5)
        assert now["max.message.bytes"][1] == 5
        assert produce(ports[leader], "t", 0, b"x" * 300)[0] == NONE

        # A group's configs: in the store, seen by every broker.
        session = [("consumer.session.timeout.ms", SET, "50000")]
        assert incremental(ports[1], [(GROUP, "g", session)]) == [("g", NONE, None)]
        for port in ports.values():
            wait_for(
                lambda port=port: (
                    configs(port, GROUP, "g")["consumer.session.timeout.ms"]
                    == ("50000", GROUP_CONFIG)
                )
            )
        refused = incremental(ports[2], [(GROUP, "g", [("consumer.session.timeout.ms", SET, "1")])])
        assert refused[0][1] == ErrorCode.invalid_config

        # The cluster-wide broker default, set through one broker, reaches
        # the other and the topics' configs there; a broker's own on itself.
        default = [("log.retention.ms", SET, "3000")]
        assert incremental(ports[1], [(BROKER, "", default)]) == [("", NONE, None)]
        wait_for(lambda: configs(ports[2], TOPIC, "t")["retention.ms"][0] == "3000")
        own = [("log.retention.ms", SET, "4000")]
        assert incremental(ports[2], [(BROKER, "2", own)]) == [("2", NONE, None)]
        assert configs(ports[2], TOPIC, "t")["retention.ms"][0] == "4000"
        assert configs(ports[1], TOPIC, "t")["retention.ms"][0] == "3000"
        refused = incremental(ports[1], [(BROKER, "2", own)])
        assert refused == [
            ("2", ErrorCode.invalid_request, "Unexpected broker id, expected 1, but received 2")
        ]
