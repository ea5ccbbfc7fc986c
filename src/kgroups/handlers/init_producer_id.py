"""InitProducerId: a fresh id for an idempotent producer; a transactional
id's producer id and epoch come from its transaction coordinator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.init_producer_id.v4 import InitProducerIdRequest, InitProducerIdResponse

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.transactions import init_producer_id as init_transactional
from kgroups.protocol.types import ProducerId, i16

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        answer = await init_transactional(broker, ctx, request)
        return _response(answer.error, answer.producer_id, answer.producer_epoch)
    # Without a transactional id Kafka hands out a fresh id whatever id and
    # epoch the request names: bumping a named id would let any client fence
    # another's producer.
    return _response(ErrorCode.none, broker.producer_ids.next_id(), 0)


def _response(error: ErrorCode, producer_id: int, epoch: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        producer_id=ProducerId(producer_id),
        producer_epoch=i16(epoch),
    )
