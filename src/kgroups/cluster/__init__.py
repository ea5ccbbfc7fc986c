"""Cluster metadata: topics and their partitions, and group placement."""
