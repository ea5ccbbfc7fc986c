"""The SCRAM credentials store: one JSON file in the broker's data directory.

Each user has at most one credential per SCRAM mechanism (salt, iterations,
StoredKey, ServerKey; never the password). The file is replaced whole,
atomically and durably, on every change, so a crash keeps the old set or the
new one. SASL/PLAIN checks passwords against these credentials too.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from kgroups.durable import replace_file
from kgroups.security.scram import HASHES, ScramCredential, password_matches

FILE_NAME = "scram-credentials.json"


class CredentialStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        # mechanism -> user -> credential
        self._by_mechanism: dict[str, dict[str, ScramCredential]] = {m: {} for m in HASHES}
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        raw = json.loads(self.path.read_text())
        for user, mechanisms in raw.items():
            for mechanism, c in mechanisms.items():
                if mechanism in self._by_mechanism:
                    self._by_mechanism[mechanism][user] = ScramCredential(
                        salt=base64.b64decode(c["salt"]),
                        stored_key=base64.b64decode(c["stored_key"]),
                        server_key=base64.b64decode(c["server_key"]),
                        iterations=int(c["iterations"]),
                    )

    def _write(self) -> None:
        out: dict[str, dict[str, dict[str, object]]] = {}
        for mechanism, users in self._by_mechanism.items():
            for user, c in users.items():
                out.setdefault(user, {})[mechanism] = {
                    "salt": base64.b64encode(c.salt).decode(),
                    "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(),
                    "iterations": c.iterations,
                }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, json.dumps(out, indent=1, sort_keys=True).encode())

    def replace(self, credentials: list[tuple[str, str, ScramCredential]]) -> None:
        """Hold exactly ``credentials`` (the cluster store's, read again), in memory."""
        by_mechanism: dict[str, dict[str, ScramCredential]] = {m: {} for m in HASHES}
        for user, mechanism, credential in credentials:
            if mechanism in by_mechanism:
                by_mechanism[mechanism][user] = credential
        for mechanism, users in by_mechanism.items():
            self._by_mechanism[mechanism].clear()
            self._by_mechanism[mechanism].update(users)

    def of(self, mechanism: str) -> dict[str, ScramCredential]:
        return self._by_mechanism[mechanism]

    def users(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations."""
        out: dict[str, dict[str, int]] = {}
        for mechanism, users in self._by_mechanism.items():
            for user, c in users.items():
                out.setdefault(user, {})[mechanism] = c.iterations
        return dict(sorted(out.items()))

    def apply(
        self,
        upserts: list[tuple[str, str, ScramCredential]],
        deletions: list[tuple[str, str]],
    ) -> None:
        """Apply changes (user, mechanism, ...) together, with one durable write."""
        for user, mechanism in deletions:
            self._by_mechanism[mechanism].pop(user, None)
        for user, mechanism, credential in upserts:
            self._by_mechanism[mechanism][user] = credential
        self._write()

    def check_password(self, user: str, password: str) -> bool:
        for mechanism, users in self._by_mechanism.items():
            credential = users.get(user)
            if credential is not None:
                return password_matches(mechanism, credential, password)
        return False
