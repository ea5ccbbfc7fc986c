"""kgroups: a Kafka-wire-compatible broker built around the group coordinator."""

__version__ = "0.1.0"
