"""kgroups' own Kafka client: connections, admin calls, producer and consumer."""
