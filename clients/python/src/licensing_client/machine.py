"""Identifiers of this computer and of this installation, with the standard library only.

:func:`machine_id` is the operating system's own machine identifier (Linux ``/etc/machine-id``, macOS
``IOPlatformUUID``, Windows ``MachineGuid``), hashed with a salt of the vendor's choosing so that ids do not correlate
across vendors; :func:`install_id` is a random id kept in the application's data directory (sessions and rollouts
count an install by it).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import uuid
from pathlib import Path

__all__ = ["machine_id", "install_id", "INSTALL_ID_FILE"]

#: The file :func:`install_id` keeps the id in, inside the directory given.
INSTALL_ID_FILE = "licensing-install-id"


def _raw_machine_id() -> str:
    if sys.platform == "win32":
        import winreg

        with winreg.OpenKey(
            winreg.HKEY_LOCAL_MACHINE,
            r"SOFTWARE\Microsoft\Cryptography",
            0,
            winreg.KEY_READ | winreg.KEY_WOW64_64KEY,
        ) as key:
            value, _ = winreg.QueryValueEx(key, "MachineGuid")
            return str(value)
    if sys.platform == "darwin":
        out = subprocess.run(
            ["ioreg", "-rd1", "-c", "IOPlatformExpertDevice"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
        found = re.search(r'"IOPlatformUUID"\s*=\s*"([^"]+)"', out)
        if found:
            return found.group(1)
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text:
            return text
    return f"node-{uuid.getnode():012x}"


def machine_id(salt: str = "") -> str:
    """This computer's id, stable across runs and reinstalls: SHA-256 (hex) of the salt and the operating system's
    machine identifier. Pass your product's name as ``salt``."""
    return hashlib.sha256(f"{salt}\n{_raw_machine_id()}".encode("utf-8")).hexdigest()


def install_id(directory: str | Path) -> str:
    """This installation's random id, made on first use and kept in ``directory`` (the application's data folder)."""
    file = Path(directory) / INSTALL_ID_FILE
    try:
        kept = file.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[!-~]{1,128}", kept):
            return kept
    except (OSError, UnicodeError):
        pass
    made = str(uuid.uuid4())
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(made, encoding="ascii")
    return made
