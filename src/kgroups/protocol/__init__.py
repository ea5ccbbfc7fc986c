"""Kafka wire protocol on top of kio: framing, headers, the API table, versions."""
