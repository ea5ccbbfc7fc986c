"""kgroups on Apache Spark: a data source for PySpark's Python Data Source API.

    import kgroups.spark
    kgroups.spark.register(spark)
    df = (spark.read.format("kgroups")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")
          .load())

The options, schema and behaviour follow Spark's own Kafka source; streaming
reads can also commit their progress to a consumer group (option ``group.id``).
``spark`` may also be a Spark Connect session (``SparkSession.builder.remote``).
See docs/spark.md. Needs the ``spark`` extra (pyspark, pyarrow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

__all__ = ["FORMAT", "register"]

FORMAT = "kgroups"


def register(spark: SparkSession | ConnectSparkSession) -> None:
    """Make ``format("kgroups")`` available in this session, classic or Spark Connect.

    Over Spark Connect the class goes to the server by reference: the server's
    Python workers must be able to import kgroups (see docs/spark.md).
    """
    from kgroups.spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
