"""Guards of the share coordinator's APIs: as in Kafka, brokers' requests
(CLUSTER_ACTION on the cluster); a caller without it gets
CLUSTER_AUTHORIZATION_FAILED for every partition it named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kgroups.handlers import share_state_apis as apis_
from kgroups.handlers.access.checks import CLUSTER_DENIED, Guard, cluster_guard
from kgroups.security.authorizer import Operation
from kgroups.share_coordinator.answers import refused

_DENIED = refused(CLUSTER_DENIED, apis_.CLUSTER_DENIED_MESSAGE)


def _guard(response: Callable[[apis_.Answers], Any]) -> Guard:
    return cluster_guard(
        Operation.CLUSTER_ACTION, lambda body: response(apis_.everywhere(body, _DENIED))
    )


initialize = _guard(apis_.initialize_response)
read = _guard(apis_.read_response)
write = _guard(apis_.write_response)
delete = _guard(apis_.delete_response)
summary = _guard(apis_.summary_response)
