"""symgraph.backends.numba.special makes its Numba dispatchers on use: a module that calls
lgamma makes lgamma's alone, its helpers' only when it compiles, and every compiled function
calls its own module's helpers (two modules' functions of one name stay apart)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from symgraph.ir import special as plain

pytestmark = pytest.mark.numba

FRESH = """
import json
from symgraph.backends.numba import special
from symgraph.ir import special_bessel, special_lgamma
ran = {"at_import": len(special._MADE)}
from symgraph.backends.numba.special import _sf_lgamma   # what a generated module does
ran["by_import"] = sorted(f.__name__ for f in special._MADE)
ran["values"] = [_sf_lgamma(2.5), _sf_lgamma(1e300), special._sf_bessely(1.0, 2.5)]
ran["after_calls"] = len(special._MADE)
ran["own_log_dd"] = []
for module in (special_lgamma, special_bessel):
    for function, clone in special._CLONES.items():
        if (function.__module__ == module.__name__ and function in special._MADE
                and "_log_dd" in clone.__code__.co_names):
            compiled = clone.__globals__["_log_dd"]
            ran["own_log_dd"].append([module.__name__, function.__name__,
                                      compiled.py_func.__code__ is module._log_dd.__code__])
print(json.dumps(ran))
"""


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A process with an empty Numba cache: lgamma and bessely compile there."""
    folder = tmp_path_factory.mktemp("numba")
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NUMBA_CACHE_DIR": str(folder)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_module_importing_lgamma_makes_its_dispatcher_alone_until_it_compiles(fresh):
    assert fresh["at_import"] == 0
    assert fresh["by_import"] == ["lgamma"]  # (the plain one under the vector-first wrapper)
    assert fresh["after_calls"] > 2  # their helpers, made as they compiled
    want = [plain.lgamma(2.5), plain.lgamma(1e300), plain.bessely(1.0, 2.5)]
    assert fresh["values"] == pytest.approx(want, rel=1e-15)


def test_compiled_functions_call_their_own_modules_helpers_of_a_shared_name(fresh):
    # special_lgamma and special_bessel each define a _log_dd of their own
    modules = {module for module, _, _ in fresh["own_log_dd"]}
    assert modules == {"symgraph.ir.special_lgamma", "symgraph.ir.special_bessel"}
    assert all(own for _, _, own in fresh["own_log_dd"]), fresh["own_log_dd"]
