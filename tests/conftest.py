"""How the kit's tests share the machine (pytest-xdist, `tox -e py`: `-n 2 --dist loadgroup`).

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

import pytest

from conformance.fuzz.draw_cache import ENV


def pytest_configure(config: pytest.Config) -> None:
    """The fleet tests behind the real vllm-router find the one `live.router` installs (its
    own cached environment, made once): a router test skipped here would be a skip in CI.
    Every process of the session (xdist workers, the CLI runs they start) shares one draw
    cache (`conformance.fuzz.draw_cache`): the fuzz folded into thirty CLI runs draws once."""
    if not hasattr(config, "workerinput") and not os.environ.get(ENV):
        folder = tempfile.mkdtemp(prefix="tito-draws-")
        os.environ[ENV] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    if os.environ.get("TITO_VLLM_ROUTER") or shutil.which("vllm-router"):
        return
    from live.router import RouterInstallError, router_env

    with contextlib.suppress(RouterInstallError):  # else they skip, saying how to get it
        os.environ["TITO_VLLM_ROUTER"] = str(router_env())


SPREAD = frozenset({"test_conformance_settings.py", "test_fuzz_defects.py"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.path.name not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
