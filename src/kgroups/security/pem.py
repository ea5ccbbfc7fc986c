"""PEM key and trust stores given inline (ssl.keystore.key,
ssl.keystore.certificate.chain, ssl.truststore.certificates), as the broker
and the client both take them."""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable

__all__ = ["inline_pem", "load_inline_key_store"]


def inline_pem(value: str) -> str:
    """Inline PEM from a properties file may have its line breaks written as \\n."""
    return value.replace("\\n", "\n")


def load_inline_key_store(
    context: ssl.SSLContext,
    key: str,
    chain: str,
    password: str | Callable[[], str] | None,
) -> None:
    """Loads an inline private key and its certificate chain into `context`."""
    # The ssl module reads key stores from files only: a private temporary one.
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{inline_pem(key)}\n{inline_pem(chain)}\n")
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)
