"""Share sessions: which partitions a member fetches from, and the epoch its
next request must carry (KIP-932's ShareFetch sessions).

- epoch 0 opens a session (a member's previous one is replaced), naming its
  partitions; the next request carries epoch 1.
- epoch N > 0 uses the session: N must be the expected epoch
  (INVALID_SHARE_SESSION_EPOCH otherwise; SHARE_SESSION_NOT_FOUND without a
  session); it adds partitions and forgets others, and the expected epoch
  moves to N + 1 (after the largest int32, to 1).
- epoch -1 closes it.

A session ends too when the connection of its last request closes (Kafka
4.1+), its member's acquired records released.

At most ``max_sessions`` sessions (``group.share.max.share.sessions``)
exist on a broker: one more is SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_MEMBER_ID_LENGTH = 36
"""Kafka refuses a longer member id in a ShareFetch or ShareAcknowledge (a
UUID's string is 36 characters)."""
_MAX_EPOCH = 2**31 - 1

SessionPartition = tuple[uuid.UUID, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    """The epoch the next request must carry."""
    partitions: dict[SessionPartition, None] = field(default_factory=dict)
    """An ordered set."""
    connection: object | None = None
    """The connection of its last request (compared by identity): the
    session ends when it closes."""

    def advance(self) -> None:
        self.epoch = 1 if self.epoch == _MAX_EPOCH else self.epoch + 1


def valid_member_id(member_id: str) -> bool:
    return 0 < len(member_id) <= MAX_MEMBER_ID_LENGTH


class SessionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ShareSessionCache:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def open(
        self, group_id: str, member_id: str, partitions: Iterable[SessionPartition]
    ) -> ShareSession:
        key = (group_id, member_id)
        if key not in self._sessions and len(self._sessions) >= self.max_sessions:
            raise SessionError(
                ErrorCode.share_session_limit_reached,
                "The limit of share sessions has been reached.",
            )
        session = ShareSession(group_id, member_id, partitions=dict.fromkeys(partitions))
        self._sessions[key] = session
        return session

    def use(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request of ``epoch`` > 0 or -1 goes on (its epoch is
        checked, not yet advanced)."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise SessionError(
                ErrorCode.share_session_not_found,
                f"Share session for member {member_id} in group {group_id} not found.",
            )
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise SessionError(
                ErrorCode.invalid_share_session_epoch,
                f"The share session epoch {epoch} does not match the expected "
                f"epoch {session.epoch}.",
            )
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def on_connection(self, connection: object) -> list[ShareSession]:
        return [s for s in self._sessions.values() if s.connection is connection]
