"""The share coordinator (KIP-932): keeper of share partitions' state in
``__share_group_state``, sans IO. One shard per partition of that topic
(shard.py), on the runtime the other coordinators use
(runtime/share_coordinator_runtime.py)."""
