"""Kafka's record batch format (v2): batches, records, compression, control
batches. Shared by the broker, kgroups' client and the Spark readers; no IO."""
