"""`python -m live.drift ...`: the same as `tito-conformance drift ...`."""

import sys

from live.drift.cli import main

sys.exit(main())
