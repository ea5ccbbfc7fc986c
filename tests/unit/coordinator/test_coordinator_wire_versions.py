"""Responses can be written by the writer of every version a client may speak.

The shell writes the newest entities with the writer of the client's
version, which reads fields by name; fields an old version lacks are
dropped, but those it has must hold values it can encode.
"""

from __future__ import annotations

import importlib
import io
from typing import Any

import pytest
from kio.serial import entity_writer

from .harness import Harness


def write(api: str, version: int, entity: Any) -> bytes:
    module = importlib.import_module(f"kio.schema.{api}.v{version}.response")
    response_type = next(getattr(module, name) for name in dir(module) if name.endswith("Response"))
    buffer = io.BytesIO()
    entity_writer(response_type)(buffer, entity)
    return buffer.getvalue()


@pytest.mark.parametrize("version", range(10))
def test_join_group_responses(version: int) -> None:
    h = Harness()
    first = h.join("g", version=version)
    second = h.join("g", h.reply(first).member_id, version=version) if version >= 4 else first
    h.advance(3000)
    ok = h.reply(second)
    error = h.reply(h.join("", version=version))
    for response in (h.reply(first), ok, error):
        assert write("join_group", version, response)
    assert ok.protocol_name == "range"


@pytest.mark.parametrize("version", range(6))
def test_sync_group_responses(version: int) -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    kwargs: dict[str, Any] = {} if version >= 5 else {"protocol_type": None, "protocol_name": None}
    ok = h.reply(h.sync("g", a, gen, version=version, **kwargs))
    error = h.reply(h.sync("g", "nobody", gen, version=version, **kwargs))
    assert write("sync_group", version, ok) and write("sync_group", version, error)


@pytest.mark.parametrize("version", range(6))
def test_leave_group_responses(version: int) -> None:
    h = Harness()
    (a,), _ = h.form_group("g", 1)
    assert write("leave_group", version, h.leave("g", (a, None), version=version))
    assert write("leave_group", version, h.leave("g", ("x", None), version=version))


@pytest.mark.parametrize("version", range(5))
def test_heartbeat_responses(version: int) -> None:
    h = Harness()
    h.heartbeat("g", "m", 1)
    assert write("heartbeat", version, h.replies[max(h.replies, key=lambda t: t.n)])


@pytest.mark.parametrize("version", range(2, 10))  # v0 and v1 are gone from the schemas
def test_offset_commit_responses(version: int) -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1, ("nope", 0): 1}, version=version)
    assert write("offset_commit", version, h.replies[max(h.replies, key=lambda t: t.n)])


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_responses(version: int) -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.fetch("g")
    assert write("offset_fetch", version, h.replies[max(h.replies, key=lambda t: t.n)])


@pytest.mark.parametrize("version", range(6))
def test_describe_and_list_responses(version: int) -> None:
    h = Harness()
    h.form_group("g", 1)
    h.describe("g")
    assert write("describe_groups", version, h.replies[max(h.replies, key=lambda t: t.n)])
    assert write("list_groups", version, h.list_groups())


@pytest.mark.parametrize("version", range(3))
def test_delete_responses(version: int) -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.delete_offsets("g", {"t": [0]})
    assert write("offset_delete", 0, h.replies[max(h.replies, key=lambda t: t.n)])
    h.delete_groups("g", "x")
    assert write("delete_groups", version, h.replies[max(h.replies, key=lambda t: t.n)])
