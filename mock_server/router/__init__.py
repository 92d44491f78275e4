"""The kit's fault-injecting router: a test instrument in front of N engines.

`create_router_app(engines, defect=None, engine_api_key=None)` is a correct router (aborts and
weight labels broadcast, streams unbuffered, headers and bytes forwarded, disconnects passed
on); `defect` names one duty to break (`ROUTER_DEFECTS`). `mock_server.harness.fleet` puts
it, or the real vllm-router, in front of `tito-mock` engines.
"""

from mock_server.router.policy import ROUTER_DEFECTS, catalogue_text, policy_for
from mock_server.router.proxy import UpstreamBroken, create_router_app

__all__ = ["ROUTER_DEFECTS", "UpstreamBroken", "catalogue_text", "create_router_app", "policy_for"]
