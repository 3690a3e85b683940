import sys
from pathlib import Path

# The helpers beside the tests (vector_checks.py) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))
