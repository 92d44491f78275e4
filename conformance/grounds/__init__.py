"""The grounds: what checks stand on, and the two places that decide a status.

- `probes`, `routed`: the probes that show a ground broken on this server (a generate with
  choices, a readable stream, behind a router each duty it must pass through);
- `graph`: the builds-on graph as data (which requirement owns which probe, what every
  check stands on without naming it, the grounds a failed check's exchanges show);
- `gate`: before a check runs, whether it may judge (absent, not claimed, limit, blocked,
  a claimed feature missing);
- `verdict`: after it runs, its status, from what it raised.
"""

from conformance.grounds.gate import broken, builds_on, unpaced_blocks
from conformance.grounds.graph import GROUND, PACED_GROUND, TEXT_GROUND, routed_grounds

__all__ = [
    "GROUND",
    "PACED_GROUND",
    "TEXT_GROUND",
    "broken",
    "builds_on",
    "routed_grounds",
    "unpaced_blocks",
]
