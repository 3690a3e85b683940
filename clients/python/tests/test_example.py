"""examples/example.py where it needs no service: its settings, and the service unreachable. The example itself runs
against the real service in the interop suite (`npm run interop`, the `example` of clients/interop.json)."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from types import ModuleType

import pytest

from licensing_client.sessions import SESSIONS_FILE, waiting_sessions

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("licensing_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["licensing_example"] = module
    spec.loader.exec_module(module)
    return module


def settings(url: str, state: Path) -> dict[str, str]:
    return {
        "LICENSING_URL": url,
        "LICENSING_PRODUCT": "studio",
        "LICENSING_USER_KEY": "8TBQ6-4N23T-EEKGS-W0N64-QHE7P",
        "LICENSING_MACHINE": "PC-EXAMPLE",
        "LICENSING_FLOATING_KEY": "8TBQ6-4N23T-EEKGS-W0N64-QHE7Q",
        "LICENSING_CA": "",
        "LICENSING_STATE": str(state),
    }


def test_missing_settings_exit_2(example: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert example.main({}) == 2
    err = capsys.readouterr().err
    for name in ("LICENSING_URL", "LICENSING_PRODUCT", "LICENSING_USER_KEY", "LICENSING_FLOATING_KEY"):
        assert name in err
    assert example.main({**settings("not an address", tmp_path)}) == 2


def test_unreachable_service(example: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert example.main(settings(url, tmp_path)) == 1
    captured = capsys.readouterr()
    assert "session" in captured.out and "refused: network" in captured.err
    # This run's session waits in the data directory for the next start.
    assert [s["status"] for s in waiting_sessions(tmp_path / SESSIONS_FILE)] == ["started"]


def test_the_guide_shows_the_example_as_it_is() -> None:
    """docs/clients/python.md's excerpt under "The example" is the file's own lines (its indentation aside)."""
    guide = (EXAMPLE.parents[3] / "docs" / "clients" / "python.md").read_text(encoding="utf-8")
    section = guide.split("## The example", 1)[1].split("\n## ", 1)[0]
    excerpt = section.split("```python\n", 1)[1].split("```", 1)[0]
    lines = [line.strip() for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    shown = [line.strip() for line in excerpt.splitlines()]
    assert len(shown) > 10
    start = lines.index(shown[0])
    assert lines[start : start + len(shown)] == shown
