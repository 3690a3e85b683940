"""Bad input never crashes the client: every vector with random bytes changed, cut short or grown, is either accepted
or refused with a LicensingError (a refusal code), never another exception."""

from __future__ import annotations

import random
from pathlib import Path
import pytest
from vector_checks import CHECKS, VECTORS, Vector, manifest

from licensing_client import LicensingError

ROUNDS = 40


def mutations(data: bytes, rng: random.Random) -> list[bytes]:
    out = []
    for _ in range(ROUNDS):
        b = bytearray(data)
        kind = rng.randrange(4)
        if kind == 0 and b:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1:
            b = b[: rng.randrange(len(b) + 1)]
        elif kind == 2:
            at = rng.randrange(len(b) + 1)
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif b:
            # A plausible character swapped for another of the same kind (base32, base64url, JSON text).
            at = rng.randrange(len(b))
            b[at] = ord(rng.choice('0123456789ABCDEFGHJKMNPQRSTVWXYZabcxyz-_.{}[]":,'))
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("vector", [v for v in manifest() if v["files"]], ids=lambda v: str(v["name"]))
def test_mutated_vectors_are_refused_or_accepted(vector: Vector, tmp_path: Path) -> None:
    rng = random.Random(vector["name"])
    role = next(r for r in vector["files"] if r != "jwks")
    original = (VECTORS / vector["files"][role]).read_bytes()
    for mutated in mutations(original, rng):
        copy = dict(vector)
        target = tmp_path / "mutated"
        target.write_bytes(mutated)
        copy["files"] = {**vector["files"], role: str(target)}
        try:
            CHECKS[vector["kind"]](copy, vector.get("params", {}))
        except LicensingError:
            pass
