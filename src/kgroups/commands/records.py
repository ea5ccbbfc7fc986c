"""`kgroups records delete`: kafka-delete-records.sh over the wire.

The offsets come in the JSON file kafka-delete-records.sh takes:
``{"partitions": [{"topic": "t", "partition": 0, "offset": 3}], "version": 1}``;
offset -1 deletes everything up to the high watermark. Each partition goes to
its leader (DeleteRecords); the answer is each one's new low watermark.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.commands.groups import table
from kgroups.commands.usage import UsageError
from kgroups.errors import KafkaError

__all__ = ["add_arguments", "delete", "read_offsets"]

TopicPartition = tuple[str, int]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--offset-json-file",
        type=Path,
        required=True,
        metavar="FILE",
        help='{"partitions": [{"topic": "t", "partition": 0, "offset": 3}], "version": 1}; '
        "offset -1: up to the high watermark",
    )
    parser.add_argument("--output", choices=("table", "json"), default="table")


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    """The partitions and offsets of an offset JSON file, as kafka-delete-records.sh
    reads it (version 1, no partition twice)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read --offset-json-file {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(f"--offset-json-file {path} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--offset-json-file {path}: expected an object with 'partitions'")
    version = data.get("version", 1)
    if version != 1:
        raise UsageError(f"--offset-json-file {path}: not supported version {version!r}")
    entries = data.get("partitions")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"--offset-json-file {path}: 'partitions' must be a non-empty list")
    offsets: dict[TopicPartition, int] = {}
    duplicates = []
    for i, entry in enumerate(entries):
        tp, offset = _entry(path, i, entry)
        if tp in offsets:
            duplicates.append(f"{tp[0]}-{tp[1]}")
        offsets[tp] = offset
    if duplicates:
        raise UsageError(
            f"--offset-json-file {path} contains duplicate topic partitions: "
            + ", ".join(duplicates)
        )
    return offsets


def _entry(path: Path, i: int, entry: Any) -> tuple[TopicPartition, int]:
    where = f"--offset-json-file {path}: partitions[{i}]"
    if not isinstance(entry, dict):
        raise UsageError(f"{where} is not an object")
    topic, partition, offset = entry.get("topic"), entry.get("partition"), entry.get("offset")
    if not isinstance(topic, str) or not topic:
        raise UsageError(f"{where} needs a 'topic' (a string)")
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise UsageError(f"{where} needs a 'partition' (an integer >= 0)")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < -1:
        raise UsageError(f"{where} needs an 'offset' (an integer >= 0, or -1: the high watermark)")
    return (topic, partition), offset


async def delete(
    bootstrap: str, offset_file: Path, output: str, security: ClientSecurity = PLAINTEXT
) -> tuple[str, bool]:
    """The answer to print, and whether every partition succeeded."""
    offsets = read_offsets(offset_file)
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client.admin import Admin

    admin = Admin(bootstrap, security=security)
    try:
        results = await admin.delete_records(offsets)
    finally:
        await admin.close()
    rows = []
    for topic, partition in offsets:
        result = results[(topic, partition)]
        row: dict[str, Any] = {"topic": topic, "partition": partition}
        if isinstance(result, KafkaError):
            row |= {"low_watermark": None, "error": result.error_code.name.upper()}
        else:
            row |= {"low_watermark": result, "error": None}
        rows.append(row)
    ok = all(r["error"] is None for r in rows)
    if output == "json":
        return json.dumps({"partitions": rows}), ok
    shown = [
        (r["topic"], r["partition"], "-" if r["error"] else r["low_watermark"], r["error"] or "-")
        for r in rows
    ]
    return table(("TOPIC", "PARTITION", "LOW-WATERMARK", "ERROR"), shown), ok
