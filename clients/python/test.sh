#!/usr/bin/env bash
# The Python client's own checks: mypy --strict over the package, tests, example and interop program, then pytest on
# the shared vectors (clients/vectors) and the client's unit tests. Arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
cd "$here"
.venv/bin/python -m mypy
.venv/bin/python -m pytest "$@"
