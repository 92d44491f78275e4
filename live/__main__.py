"""`python -m live ...`: the same as `tito-conformance live ...`."""

import sys

from live.cli import main

if __name__ == "__main__":  # not when a spawned process imports it
    sys.exit(main())
