"""RFC 8785 JSON Canonicalization Scheme (JCS): the exact bytes the service signs for an update check (CONTRACT 5).

Canonicalization is Trail of Bits' ``rfc8785`` package; parse with :func:`parse_json` first so that numbers are read
as the doubles the service reads (an integer beyond 2^53 becomes the nearest double, as in JavaScript).
"""

from __future__ import annotations

from typing import Any

import rfc8785

from ._wire import parse_json
from .errors import VerificationError

__all__ = ["canonicalize", "parse_json"]


def canonicalize(value: Any) -> bytes:
    """The UTF-8 bytes of the RFC 8785 canonical JSON of ``value``. A value JSON cannot carry (NaN, an infinity, a
    lone surrogate, a non-JSON type) raises :class:`VerificationError` ``malformed``."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, UnicodeError) as error:
        raise VerificationError("malformed", f"The JSON cannot be canonicalized: {error}") from error
