"""A broker process whose transaction markers are written on command, until
WriteTxnMarkers reaches it over the wire: `python txn_marker_broker.py DATA
PORT`, then lines `commit|abort GROUP PRODUCER_ID` on stdin, each answered by
the marker's error code name. Tests kill it with SIGKILL."""

from __future__ import annotations

import sys
from pathlib import Path

from kgroups.testing.thread_broker import ThreadBroker
from kgroups.topics.placement import partition_for_group


def main() -> None:
    data, port = Path(sys.argv[1]), int(sys.argv[2])
    # Producer ids no transaction coordinator knows: nothing to verify them with.
    overrides = {"transaction.partition.verification.enable": "false"}
    broker = ThreadBroker(data, overrides, port=port).start()
    assert broker.broker is not None
    coordinator = broker.broker.coordinator
    print("ready", flush=True)
    for line in sys.stdin:
        action, group, producer_id = line.split()
        partition = partition_for_group(group, coordinator.partitions)
        error = broker.run(
            coordinator.complete_transaction(
                partition, int(producer_id), 0, 0, commit=action == "commit"
            )
        )
        print(error.name, flush=True)


if __name__ == "__main__":
    main()
