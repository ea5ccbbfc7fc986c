"""Broker configuration: Kafka's keys and defaults, listeners, TLS and SASL
settings, and which keys are secrets."""
