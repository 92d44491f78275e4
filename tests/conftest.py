"""How the kit's tests share the machine (pytest-xdist, `tox -e py`: `-n 3 --dist loadgroup`).

Most of the tests wait on servers (a mock's latency, a suite run at a slow server's pace), so
more workers than cores pays. A module keeps its tests on one worker, where its module-scoped
fixtures (a blast-radius batch, a live stand-in run, a browser) are built once, except the
modules in SPREAD, whose tests are independent runs that are long each.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any

import pytest

from conformance.fuzz.draw_cache import ENV
from loopback import vllm_router
from tests import selection


def pytest_configure(config: pytest.Config) -> None:
    """The fleet tests behind the real vllm-router find the one `live.router` installs (its
    own cached environment, made once): a router test skipped here would be a skip in CI.
    Every process of the session (xdist workers, the CLI runs they start) shares one draw
    cache (`conformance.fuzz.draw_cache`): the fuzz folded into thirty CLI runs draws once."""
    if not hasattr(config, "workerinput") and not os.environ.get(ENV):
        folder = tempfile.mkdtemp(prefix="tito-draws-")
        os.environ[ENV] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    if os.environ.get(vllm_router.BINARY_ENV) or vllm_router.find_binary():
        return  # one given (even a wrong one: the tests then say so) or on PATH
    from live.router import RouterInstallError, router_env

    with contextlib.suppress(RouterInstallError):  # else they skip, saying how to get it
        os.environ[vllm_router.BINARY_ENV] = str(router_env())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each case `tests/selection.py` moves out of the fast command gets its environment's
    marker (before `-m` selects), so `tox -e py` deselects it and `tox -e ENV` runs it."""
    for item in items:
        function = getattr(item, "originalname", item.name)
        callspec = getattr(item, "callspec", None)
        env = selection.env_of(item.path.name, function, callspec.id if callspec else None)
        if env is not None:
            item.add_marker(env)


SPREAD = frozenset(
    {
        "test_conformance_settings.py",
        "test_fuzz_defects.py",
        # a router defect's run each, with nothing built per module (`tox -e sweeps`)
        "test_conformance_router.py",
        "test_router_blast.py",
        # a whole CLI run against a hostile server each; a load run per defect or setting
        "test_conformance_hostile.py",
        "test_load_defects.py",
        "test_load_settings.py",
    }
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` (the README's command) as this suite means it: one module a worker,
    except SPREAD's tests, one by one. Scheduled here, not by `xdist_group` marks: xdist
    carries a mark to its scheduler by rewriting the node id, which pytest 9.2 no longer
    reads (pytest-xdist#1386), so the marks were lost, every module was spread over both
    workers, and each worker built the module fixtures again (the blast-radius batch of
    ~150 suite runs twice)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ByModule(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module.rsplit("/", 1)[-1] in SPREAD else module

    return ByModule(config, log)
