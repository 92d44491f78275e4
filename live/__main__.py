"""`python -m live ...`: the same as `tito-conformance live ...`."""

import sys

from live.cli import main

sys.exit(main())
