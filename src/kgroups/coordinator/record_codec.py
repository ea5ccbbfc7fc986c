"""Kafka's message encoding for the ``__consumer_offsets`` records, classic
and consumer group alike.

Keys are not flexible (int16 string lengths); values are flexible from their
flexible version on (unsigned varint lengths plus one, tagged fields), before
it int16 string and int32 bytes and array lengths. Only the primitives these
records use are here.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """Bytes that are not a record of a known version."""


class Writer:
    __slots__ = ("_buf", "_flexible")

    def __init__(self, version: int, flexible: bool) -> None:
        self._buf = bytearray(_INT16.pack(version))
        self._flexible = flexible

    def int8(self, value: int) -> None:
        self._buf += _INT8.pack(value)

    def int32(self, value: int) -> None:
        self._buf += _INT32.pack(value)

    def int64(self, value: int) -> None:
        self._buf += _INT64.pack(value)

    def uuid(self, value: uuid.UUID) -> None:
        self._buf += value.bytes

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self._buf.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buf.append(value)

    def string(self, value: str | None) -> None:
        if value is None:
            if self._flexible:
                self.uvarint(0)
            else:
                self._buf += _INT16.pack(-1)
            return
        encoded = value.encode()
        if self._flexible:
            self.uvarint(len(encoded) + 1)
        else:
            self._buf += _INT16.pack(len(encoded))
        self._buf += encoded

    def bytes_(self, value: bytes) -> None:
        if self._flexible:
            self.uvarint(len(value) + 1)
        else:
            self._buf += _INT32.pack(len(value))
        self._buf += value

    def array_length(self, length: int) -> None:
        if self._flexible:
            self.uvarint(length + 1)
        else:
            self._buf += _INT32.pack(length)

    def no_tagged_fields(self) -> None:
        if self._flexible:
            self.uvarint(0)

    def raw(self, data: bytes) -> None:
        self._buf += data

    def getvalue(self) -> bytes:
        return bytes(self._buf)


class Reader:
    __slots__ = ("_data", "_pos", "flexible")

    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self.flexible = flexible

    def _take(self, size: int) -> memoryview:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise RecordFormatError("record ends early")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int8(self) -> int:
        value: int = _INT8.unpack(self._take(1))[0]
        return value

    def int16(self) -> int:
        value: int = _INT16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack(self._take(8))[0]
        return value

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def uvarint(self) -> int:
        result = 0
        for shift in range(0, 35, 7):
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
        raise RecordFormatError("varint too long")

    def nullable_string(self) -> str | None:
        length = self.uvarint() - 1 if self.flexible else self.int16()
        if length < 0:
            return None
        try:
            return bytes(self._take(length)).decode()
        except UnicodeDecodeError as e:
            raise RecordFormatError("string is not UTF-8") from e

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise RecordFormatError("null where a string is required")
        return value

    def bytes_(self) -> bytes:
        length = self.uvarint() - 1 if self.flexible else self.int32()
        if length < 0:
            raise RecordFormatError("null where bytes are required")
        return bytes(self._take(length))

    def array_length(self) -> int:
        length = self.uvarint() - 1 if self.flexible else self.int32()
        if length < 0:
            raise RecordFormatError("null where an array is required")
        return length

    def tagged_fields(self, read_tag: Callable[[int, Reader], None] | None = None) -> None:
        """Read the tagged fields (none before the flexible versions);
        ``read_tag(tag, reader)`` reads the ones the caller knows, the others
        are skipped."""
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            body = bytes(self._take(size))
            if read_tag is not None:
                read_tag(tag, Reader(body, flexible=True))

    def at_end(self) -> bool:
        return self._pos == len(self._data)
