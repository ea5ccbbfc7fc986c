"""Dynamic configs of groups, brokers and client metrics subscriptions,
changed at run time by IncrementalAlterConfigs and AlterConfigs (KIP-226 for
brokers, KIP-848 for groups, KIP-714 for client metrics), as Kafka keeps
them in its metadata log.

Each resource, ``(type, name)`` with Kafka's ConfigResource.Type numbers,
has its overrides. A broker alone keeps them in one JSON file in its log
directory, replaced whole and durably on each change; in a cluster the store
holds them and every broker takes them at its next read (``replace``).
Listeners hear of each change, so the broker can apply it where it matters.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from kgroups.durable import replace_file

__all__ = ["CONFIGS_FILE", "DynamicConfigs", "Plan", "Resource"]

CONFIGS_FILE = "kgroups-configs.json"

Resource = tuple[int, str]  # (ConfigResource.Type, name)
Plan = Callable[[Mapping[str, str]], dict[str, str]]
"""A resource's overrides now -> the overrides wanted (or a KafkaError)."""

_EMPTY: Mapping[str, str] = {}
GROUP = 32


class DynamicConfigs:
    def __init__(self, log_dir: Path | None) -> None:
        """``log_dir``: where a broker alone keeps them; None in a cluster."""
        self._path = None if log_dir is None else log_dir / CONFIGS_FILE
        self._entries: dict[Resource, dict[str, str]] = {}
        self._listeners: list[Callable[[frozenset[Resource]], None]] = []
        self._writing = asyncio.Lock()
        if self._path is not None and self._path.exists():
            for entry in json.loads(self._path.read_text()):
                self._entries[(int(entry["type"]), str(entry["name"]))] = dict(entry["configs"])

    def get(self, rtype: int, name: str) -> Mapping[str, str]:
        return self._entries.get((rtype, name), _EMPTY)

    def of_type(self, rtype: int) -> dict[str, Mapping[str, str]]:
        """Every resource of a type with its overrides, by name."""
        return {name: configs for (t, name), configs in self._entries.items() if t == rtype}

    def group_configs(self, group_id: str) -> Mapping[str, str]:
        """A group's overrides (the consumer group coordinator asks)."""
        return self._entries.get((GROUP, group_id), _EMPTY)

    def on_change(self, listener: Callable[[frozenset[Resource]], None]) -> None:
        self._listeners.append(listener)

    async def alter(self, rtype: int, name: str, plan: Plan) -> dict[str, str]:
        """Apply ``plan`` to the resource's overrides and write them durably (a
        broker alone); the overrides now."""
        assert self._path is not None, "in a cluster the store is written"
        async with self._writing:
            wanted = plan(self.get(rtype, name))
            entries = dict(self._entries)
            entries[(rtype, name)] = wanted
            await asyncio.to_thread(_write, self._path, entries)
            self.put(rtype, name, wanted)
            return wanted

    def put(self, rtype: int, name: str, configs: Mapping[str, str]) -> None:
        """Take one resource's overrides as they now are (written already)."""
        if configs:
            self._entries[(rtype, name)] = dict(configs)
        else:
            self._entries.pop((rtype, name), None)
        self._tell(frozenset({(rtype, name)}))

    def replace(self, entries: Mapping[Resource, Mapping[str, str]]) -> None:
        """Take every resource's overrides, as the cluster store holds them."""
        fresh = {r: dict(c) for r, c in entries.items() if c}
        changed = frozenset(
            r for r in fresh.keys() | self._entries.keys() if fresh.get(r) != self._entries.get(r)
        )
        if changed:
            self._entries = fresh
            self._tell(changed)

    def _tell(self, changed: frozenset[Resource]) -> None:
        for listener in self._listeners:
            listener(changed)


def _write(path: Path, entries: Mapping[Resource, Mapping[str, str]]) -> None:
    data = [
        {"type": rtype, "name": name, "configs": dict(configs)}
        for (rtype, name), configs in sorted(entries.items())
        if configs
    ]
    replace_file(path, json.dumps(data, indent=1, sort_keys=True).encode())
