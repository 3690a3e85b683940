#!/usr/bin/env bash
# Creates clients/python/.venv and installs the pinned dependencies (requirements.lock) and this package (editable),
# from PyPI. Safe to run again: it does nothing when the lock and pyproject.toml have not changed since the last run.
# PYTHON chooses the interpreter (default python3, at least 3.10).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="$here/.venv"

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or newer is needed (set PYTHON)")'

stamp="$venv/.installed"
wanted="$(cat "$here/requirements.lock" "$here/pyproject.toml" | "$python" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  exit 0
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
"${pip[@]}" install -r "$here/requirements.lock"
"${pip[@]}" install --no-deps --editable "$here"
echo "$wanted" > "$stamp"
