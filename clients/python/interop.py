"""The interop program of CONTRACT 14 for the Python client: ``interop.py <case> [options]`` (see
licensing_client/interop.py). Run it with the interpreter of the venv that setup.sh makes."""

import sys

from licensing_client.interop import main

if __name__ == "__main__":
    sys.exit(main())
