"""Prometheus metrics: the broker's endpoint (``metrics.port``) and the lag
exporter for any Kafka cluster (``kgroups lag-exporter``). See docs/metrics.md."""
