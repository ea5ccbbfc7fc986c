"""Kafka's transaction coordinator, as a sans-IO model (see docs/transactions.md)."""
