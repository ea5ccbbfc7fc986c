"""Which broker configs change at run time (KIP-226), as in Kafka's
DynamicBrokerConfig, of those kgroups has: the defaults of topics' log configs
(``log.retention.*``, ``log.segment.bytes``, ``log.roll.*``,
``log.cleanup.policy``, ``log.cleaner.*`` compaction settings,
``message.max.bytes`` ...), ``num.partitions``, and the Kerberos and SASL
login refresh keys (accepted, no effect). Each is set per broker
(resource name: its id) or as the cluster-wide default (empty name); a
broker's own beats the default, which beats ``server.properties``."""

from __future__ import annotations

from collections.abc import Mapping

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.config.broker_settings import SETTINGS
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["BROKER", "BROKER_LIST_KEYS", "DYNAMIC_BROKER_KEYS", "check_broker_configs"]

BROKER = 4

DYNAMIC_BROKER_KEYS = frozenset(
    {
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.hours",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.retention.bytes",
        "log.index.interval.bytes",
        "log.index.size.max.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.cleanup.policy",
        "log.message.timestamp.type",
        "message.max.bytes",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "log.roll.jitter.ms",
        "log.roll.jitter.hours",
        "log.segment.delete.delay.ms",
        "log.preallocate",
        "log.message.downconversion.enable",
        "log.local.retention.ms",
        "log.local.retention.bytes",
        "num.partitions",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
    }
)
BROKER_LIST_KEYS = frozenset({"log.cleanup.policy"})


def check_broker_configs(
    config: BrokerConfig, wanted: Mapping[str, str], *layers: Mapping[str, str]
) -> BrokerConfig:
    """The broker's settings with ``layers`` (the other dynamic layers, then
    ``wanted``) over them, or the refusal Kafka gives: INVALID_CONFIG for an
    unknown key or a bad value, INVALID_REQUEST for a key set only at start."""
    unknown = sorted(k for k in wanted if k not in SETTINGS)
    if unknown:
        raise KafkaError(ErrorCode.invalid_config, f"Unknown broker config name: {unknown[0]}")
    static = sorted(k for k in wanted if k not in DYNAMIC_BROKER_KEYS)
    if static:
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Cannot update these configs dynamically: Set({', '.join(static)})",
        )
    try:
        config.with_dynamic(wanted)  # each value, though another layer may hide it
        return config.with_dynamic(*layers)
    except ConfigError as e:
        raise KafkaError(ErrorCode.invalid_config, str(e)) from None
