"""Consumer-group analytics over a cluster's ``__consumer_offsets``, on Spark.

Run as ``kgroups analytics`` or ``spark-submit`` of ``kgroups/spark/analytics/main.py``;
see docs/spark.md.
"""
