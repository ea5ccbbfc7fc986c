"""Request frames for fuzzing the broker: a valid request of every API and version
the broker serves, and ways to break them (lengths pushed to their extremes,
flipped bytes, cuts)."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kgroups.protocol import apis

from kio_samples import encode, nullable_paths, sample

# Values a length field can be pushed to: uvarint 0xFFFFFFFF and 2**35 - 1,
# int32 2**31 - 1, int16 2**15 - 1, and -2 in both widths.
EXTREMES = (
    b"\xff\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x7f",
    b"\x7f\xff\xff\xff",
    b"\x7f\xff",
    b"\xff\xfe",
    b"\xff\xff\xff\xfe",
)


@dataclass(frozen=True, slots=True)
class Seed:
    api_key: int
    version: int
    header: bytes
    body: bytes
    null_at: tuple[str, ...] = ()  # the field set to null, if any


def served() -> Iterator[tuple[int, int]]:
    for key, r in apis.SUPPORTED.items():
        for version in range(r.min_version, r.max_version + 1):
            yield key, version


def header(api_key: int, version: int, client_id: bytes = b"fuzz") -> bytes:
    codec = apis.codec(api_key, version)
    fixed = struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id
    return fixed + b"\x00" if codec.request_header_flexible else fixed


def seeds(with_nulls: bool = True) -> list[Seed]:
    """A request of every served API and version; with_nulls adds one per
    nullable field, that field null."""
    out = []
    for key, version in served():
        request_type = apis.codec(key, version).request_type
        paths = [(), *nullable_paths(request_type)] if with_nulls else [()]
        for path in paths:
            body = encode(sample(request_type, path))
            out.append(Seed(key, version, header(key, version), body, path))
    return out


def extreme_lengths(seed: Seed) -> Iterator[bytes]:
    """The request (without its size prefix) with each extreme written over,
    and inserted at, every offset of the body."""
    body = seed.body
    for extreme in EXTREMES:
        for at in range(len(body)):
            yield seed.header + body[:at] + extreme + body[at + len(extreme) :]
            yield seed.header + body[:at] + extreme + body[at:]


def mutant(rng: random.Random, seed: Seed) -> bytes:
    """One randomly broken version of the request (without its size prefix)."""
    body = bytearray(seed.body)
    head = seed.header
    roll = rng.random()
    if roll < 0.4 and body:
        at = rng.randrange(len(body))
        extreme = rng.choice(EXTREMES)
        if rng.random() < 0.5:
            body[at : at + len(extreme)] = extreme
        else:
            body[at:at] = extreme
    elif roll < 0.7 and body:
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    elif roll < 0.85:
        del body[rng.randrange(len(body) + 1) :]
    elif roll < 0.95:
        body += rng.randbytes(rng.randint(1, 32))
    else:
        head = bytearray(head)
        head[rng.randrange(len(head))] = rng.randrange(256)
        head = bytes(head)
    return head + bytes(body)


def framed(request: bytes) -> bytes:
    return struct.pack(">i", len(request)) + request
