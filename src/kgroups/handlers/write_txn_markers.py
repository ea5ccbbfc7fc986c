"""WriteTxnMarkers: a transaction coordinator asks this broker, the partitions'
leader, to end transactions with commit or abort markers (see txn_markers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.write_txn_markers.v2 import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kio.schema.write_txn_markers.v2.response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
)

from kgroups.handlers.txn_markers import TxnMarker, write_txn_markers
from kgroups.protocol.types import i32

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    markers = [
        TxnMarker(
            producer_id=m.producer_id,
            producer_epoch=m.producer_epoch,
            coordinator_epoch=m.coordinator_epoch,
            commit=m.transaction_result,
            partitions=tuple((t.name, p) for t in m.topics for p in t.partition_indexes),
        )
        for m in request.markers
    ]
    results = await write_txn_markers(broker, markers)
    return WriteTxnMarkersResponse(
        markers=tuple(
            WritableTxnMarkerResult(
                producer_id=m.producer_id,
                topics=tuple(
                    WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=tuple(
                            WritableTxnMarkerPartitionResult(
                                partition_index=i32(p), error_code=errors[(t.name, p)]
                            )
                            for p in t.partition_indexes
                        ),
                    )
                    for t in m.topics
                ),
            )
            for m, errors in zip(request.markers, results, strict=True)
        )
    )
