"""Counters the request path keeps for the metrics endpoint.

Each costs the request path an int or dict operation or two: requests and
their time by API key (indexed lists, an API key fits in a byte), bytes and
messages by topic, connections. Everything else is read from the broker's
state when scraped.
"""

from __future__ import annotations

# API keys this broker can be asked for are below 256 (peek_api checks the rest).
_API_SLOTS = 256


class BrokerStats:
    __slots__ = (
        "bytes_in",
        "bytes_out",
        "connections",
        "connections_created",
        "messages_in",
        "offset_commits",
        "record_acknowledgements",
        "request_seconds",
        "requests",
    )

    def __init__(self) -> None:
        self.requests = [0] * _API_SLOTS
        """Requests answered (or dropped, acks=0), by API key."""
        self.request_seconds = [0.0] * _API_SLOTS
        """Their total time from read to answer, by API key."""
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.offset_commits = 0
        """Partitions named by OffsetCommit requests (Kafka's offset-commit-count)."""
        self.connections = 0
        self.connections_created = 0
        self.record_acknowledgements: dict[int, int] = {}
        """Records share consumers acknowledged, by acknowledgement type id
        (Kafka's RecordAcknowledgementsPerSec)."""

    def produced(self, topic: str, size: int, messages: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size
        self.messages_in[topic] = self.messages_in.get(topic, 0) + messages

    def fetched(self, topic: str, size: int) -> None:
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + size

    def acknowledged(self, ack_type: int, records: int) -> None:
        counts = self.record_acknowledgements
        counts[ack_type] = counts.get(ack_type, 0) + records
