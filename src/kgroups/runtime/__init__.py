"""The coordinators hosted: one shard per internal-topic partition, loaded by
replay, appending through the partition seam, replying once durable."""
