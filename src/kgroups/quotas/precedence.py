"""Which quota applies to a client, as Kafka's default quota callback decides.

For each quota key on its own, the first of these entities that sets it wins:

1. user and client id          5. default user, default client id
2. user, default client id     6. default user
3. user                        7. client id
4. default user and client id  8. default client id

Clients under the same winning entity share one rate when the entity names
neither part by default; a default part gives each user (or client id) a rate
of its own, measured against the default's bound. So the match also says whose
rate is measured: (user, client id) for 1, 2, 4, 5; (user, "") for 3 and 6;
("", client id) for 7 and 8. An address's connection rate has its own quota,
or the default address's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.quotas.entities import CLIENT_ID, IP, USER, Entity

__all__ = ["Match", "QuotaTable"]

_DEFAULT = object()  # a part named by default (None on the wire)
_Part = str | object | None  # a name, _DEFAULT, or absent


@dataclass(frozen=True, slots=True)
class Match:
    bound: float
    measured: tuple[str, str]
    """(user, client id) whose rate is measured; "" where the match spans all."""


class QuotaTable:
    """Quotas by entity, indexed for lookup by key."""

    def __init__(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        self.quotas = {e: dict(v) for e, v in quotas.items() if v}
        self._clients: dict[str, dict[tuple[_Part, _Part], float]] = {}
        self._ips: dict[str, dict[object, float]] = {}
        for entity, values in self.quotas.items():
            parts = dict(entity)
            for key, value in values.items():
                if IP in parts:
                    self._ips.setdefault(key, {})[_address(parts[IP])] = value
                else:
                    slot = (_part(parts, USER), _part(parts, CLIENT_ID))
                    self._clients.setdefault(key, {})[slot] = value

    def is_empty(self) -> bool:
        return not self.quotas

    def sets(self, key: str) -> bool:
        """Whether any entity has a quota for ``key``."""
        return key in self._clients or key in self._ips

    def client_quota(self, key: str, user: str, client_id: str) -> Match | None:
        table = self._clients.get(key)
        if table is None:
            return None
        both = (user, client_id)
        for slot, measured in (
            ((user, client_id), both),
            ((user, _DEFAULT), both),
            ((user, None), (user, "")),
            ((_DEFAULT, client_id), both),
            ((_DEFAULT, _DEFAULT), both),
            ((_DEFAULT, None), (user, "")),
            ((None, client_id), ("", client_id)),
            ((None, _DEFAULT), ("", client_id)),
        ):
            bound = table.get(slot)
            if bound is not None:
                return Match(bound, measured)
        return None

    def ip_quota(self, key: str, host: str) -> float | None:
        table = self._ips.get(key)
        if table is None:
            return None
        bound = table.get(_address(host))
        return table.get(_DEFAULT) if bound is None else bound


def _part(parts: Mapping[str, str | None], etype: str) -> _Part:
    if etype not in parts:
        return None
    name = parts[etype]
    return _DEFAULT if name is None else name


def _address(host: str | None) -> object:
    if host is None:
        return _DEFAULT
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return host
