"""The mock's stages, their slots of behaviour, and the defects' policies (see `registry`).

Importing the package registers every policy, stage by stage.
"""

from mock_server.behaviour.policies import admit, gate, output, parse, validate
from mock_server.behaviour.policies import sampling as generate
from mock_server.behaviour.policies.registry import build as build_policies
from mock_server.behaviour.policies.registry import policy, registered
from mock_server.behaviour.policies.slots import STAGES, Policies

__all__ = [
    "STAGES",
    "Policies",
    "admit",
    "build_policies",
    "gate",
    "generate",
    "output",
    "parse",
    "policy",
    "registered",
    "validate",
]
