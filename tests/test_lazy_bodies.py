"""A generated module's steps and lanes are imported as stubs once its bytecode is kept
(backends.lazy_code): each fetches its real code on its first call, from the kept bytecode
(checked) or, when that is damaged, from the text; and compiles read a function's text from
the text imported, not from the file, which may have changed since."""

import inspect
import itertools

import numpy as np
import pytest

from symgraph.backends import imports, lazy_code

TEXT = '''"""A test module."""


def twice_steps(_x, _out):
    _t0 = _x[0] * 2.0
    _out[0] = _t0 + 1.0


def twice_lanes(_X, _OUT, _T, _s, _m):
    for _j in range(_m):
        _OUT[_s + _j, 0] = _X[_s + _j, 0] * 2.0 + 1.0


def twice_row(_x, _out):
    twice_steps(_x, _out)


def named_steps(_x, *, _out=None):
    return _x
'''
_names = itertools.count()


def _imported(folder, text=TEXT, lazy=("_steps", "_lanes")):
    """The module of `text` from folder/sg_test.py, under a new name (a second import)."""
    path = folder / "sg_test.py"
    if not path.exists():
        path.write_text(text)
    return imports.import_file(f"symgraph_lazy_test_{next(_names)}", path, text, lazy=lazy)


def _stubs(module):
    return sorted(n for n, v in vars(module).items() if lazy_code.is_stub(v))


def test_a_second_import_has_stubs_that_fetch_their_code_on_first_call(tmp_path):
    first = _imported(tmp_path)
    assert _stubs(first) == []  # (compiled from the text: every function whole)
    module = _imported(tmp_path)
    # plain positional ones only: named_steps (keyword-only) is whole
    assert _stubs(module) == ["twice_lanes", "twice_steps"]
    assert inspect.getsource(module.twice_steps) == inspect.getsource(first.twice_steps)
    out = [0.0]
    module.twice_row([3.0], out)  # calls the stub: the real code put in place, then run
    assert out == [7.0] and _stubs(module) == ["twice_lanes"]
    OUT = np.zeros((2, 1))
    module.twice_lanes(np.array([[1.0], [2.0]]), OUT, None, 0, 2)
    assert OUT.tolist() == [[3.0], [5.0]] and _stubs(module) == []


def test_unstubbed_gives_the_real_function_before_its_first_call(tmp_path):
    _imported(tmp_path)
    module = _imported(tmp_path)
    steps = module.twice_steps
    assert lazy_code.is_stub(steps)
    assert lazy_code.unstubbed(steps) is steps and not lazy_code.is_stub(steps)
    assert "_t0" in steps.__code__.co_varnames  # (what Numba's front end would compile)


@pytest.mark.parametrize("damaged", [".sgs", ".sgc"])
def test_damaged_kept_bytecode_is_compiled_again_never_run(tmp_path, damaged):
    _imported(tmp_path)
    _imported(tmp_path)  # (the stubs' copy kept)
    kept = next((tmp_path / "__pycache__").glob(f"*{damaged}"))
    data = bytearray(kept.read_bytes())
    data[-20] ^= 0x40
    kept.write_bytes(bytes(data))
    module = _imported(tmp_path)
    out = [0.0]
    module.twice_row([0.5], out)
    assert out == [2.0] and not lazy_code.is_stub(module.twice_steps)


def test_a_compile_reads_the_text_imported_not_the_file_edited_since(tmp_path):
    module = _imported(tmp_path)
    (tmp_path / "sg_test.py").write_text(TEXT.replace("* 2.0", "* 5.0"))
    assert "_x[0] * 2.0" in imports.source_of(module.twice_steps)
    assert imports.source_of(module.twice_steps).startswith("def twice_steps(_x, _out):")
    assert "twice_lanes" not in imports.source_of(module.twice_steps)


def test_without_lazy_names_nothing_is_a_stub(tmp_path):
    _imported(tmp_path, lazy=())
    assert _stubs(_imported(tmp_path, lazy=())) == []
