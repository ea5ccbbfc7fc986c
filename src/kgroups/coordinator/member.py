"""One member of a classic group, as the coordinator sees it, and the
member id Kafka gives a new member."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kgroups.protocol.strings import MAX_STRING_BYTES, fit

# Each protocol the member supports, in its order of preference, with the
# member's metadata for it (for consumers: the serialised subscription).
Protocols = tuple[tuple[str, bytes], ...]


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    # reply_to of a JoinGroup or SyncGroup parked until the group can answer.
    awaiting_join: object | None = None
    awaiting_sync: object | None = None
    # api_version of the parked JoinGroup, which shapes its eventual response.
    join_api_version: int = 0
    # Joined but not yet through a join phase; such members can time out while
    # their JoinGroup is parked (Kafka's MemberMetadata.isNew).
    is_new: bool = False
    _protocol_names: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        self._protocol_names = frozenset(name for name, _ in self.protocols)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def protocol_names(self) -> frozenset[str]:
        return self._protocol_names

    def set_protocols(self, protocols: Protocols) -> None:
        self.protocols = protocols
        self._protocol_names = frozenset(name for name, _ in protocols)

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def session_is_kept_alive(self) -> bool:
        """Whether a session deadline reached now is ignored.

        A member waiting for its JoinGroup or SyncGroup answer cannot heartbeat,
        so it is not expired — unless it is new, because a new member whose
        client gave up on a long rebalance would otherwise linger forever.
        """
        return not self.is_new and (self.is_awaiting_join or self.is_awaiting_sync)


def kafka_member_id(prefix: str) -> str:
    """Kafka's member id: client id (or group instance id), a dash, a UUID; the
    prefix cut so that the whole fits a string of any version."""
    return f"{fit(prefix, MAX_STRING_BYTES - _DASH_AND_UUID)}-{uuid.uuid4()}"


_DASH_AND_UUID = 37
