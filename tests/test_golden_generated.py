"""The checked-in files under generated/ are exactly what symgraph generates today, and they
show the math first: the first kernel near the top, no runtime code (Numba's internals live in
symgraph.backends.numba.runtime, which the Numba modules import), nothing pasted into several."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import symgraph as sg

GENERATED = Path(__file__).resolve().parent.parent / "generated"
# The runtime's digest changes with every edit of the runtime (a new file for Numba's cache);
# the goldens hold the one of their last regeneration.
DIGEST = re.compile(r"^# runtime [0-9a-f]{24}:", re.MULTILINE)


def polynomial(backend: str) -> sg.CompiledFunction:
    x = sg.symbols("x")
    return sg.compile(x**2 + 2 * x + 1, [x], hessian=True, backend=backend)


def linear_mse(backend: str) -> sg.CompiledFunction:
    # The text's model y = W*x + b with squared error against y_true; parameters W and b.
    W, b, x, y_true = sg.symbols("W b x y_true")
    loss = (W * x + b - y_true) ** 2
    return sg.compile(loss, [W, b, x, y_true], wrt=[W, b], backend=backend)


def logistic_loss(backend: str) -> sg.CompiledFunction:
    # Lane batch kernels: exp and log run as vecmath calls in loops LLVM vectorises.
    x, w = sg.symbols("x w")
    return sg.compile(sg.log(1 + sg.exp(-x * w)), [x, w], backend=backend)


def normal_cdf(backend: str) -> sg.CompiledFunction:
    # NumPy has no erf: the Python module's batch kernels use its prelude's _erf.
    x = sg.symbols("x")
    return sg.compile(0.5 * (1 + sg.erf(x / sg.sqrt(2.0))), [x], backend=backend)


def pendulums(backend: str) -> sg.CompiledFunction:
    # Eight pendulums' potential energy: the point kernels compute the cos of each angle (the
    # value) with its sin (the gradient) as one pack of vsincos calls (backends.numba.packs).
    thetas = sg.symbols("t0 t1 t2 t3 t4 t5 t6 t7")
    return sg.compile(sum((k + 1.0) * (1 - sg.cos(t)) for k, t in enumerate(thetas)), thetas,
                      backend=backend)


CASES = {"polynomial": (polynomial, ("python", "numba")), "pendulums": (pendulums, ("numba",)),
         "linear_mse": (linear_mse, ("python", "numba")),
         "logistic_loss": (logistic_loss, ("numba",)), "normal_cdf": (normal_cdf, ("python",))}
GOLDENS = [(case, backend) for case, (_, backends) in sorted(CASES.items()) for backend in backends]


def _masked(source: str) -> str:
    return DIGEST.sub("# runtime <digest>:", source)


@pytest.mark.parametrize(("case", "backend"), GOLDENS)
def test_generated_file_is_byte_identical_to_checked_in_golden(case, backend, update_golden):
    source = CASES[case][0](backend).source
    golden = GENERATED / f"{case}_{backend}.py"
    if update_golden:
        golden.write_text(source, encoding="utf-8")
    assert _masked(golden.read_text(encoding="utf-8")) == _masked(source)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_golden_kernels_compute_the_texts_numbers(backend):
    poly = polynomial(backend)
    assert poly.value_and_grad(3.0)[0] == 16.0
    assert poly.grad(3.0).tolist() == [8.0]
    assert poly.hessian(3.0).tolist() == [[2.0]]
    mse = linear_mse(backend)
    # W=2, b=1, x=1, y_true=2: loss (3-2)^2 = 1, dL/dW = 2*(y-t)*x = 2, dL/db = 2
    value, gradient = mse.value_and_grad(2.0, 1.0, 1.0, 2.0)
    assert (value, gradient.tolist()) == (1.0, [2.0, 2.0])


def test_the_new_goldens_hold_a_lane_kernel_and_the_numpy_prelude():
    assert "def value_grad_lanes(" in (GENERATED / "logistic_loss_numba.py").read_text()
    assert "_erf = np.vectorize(" in (GENERATED / "normal_cdf_python.py").read_text()


def test_the_first_numba_kernel_is_within_the_first_40_lines():
    lines = (GENERATED / "polynomial_numba.py").read_text(encoding="utf-8").splitlines()
    first = next(k for k, line in enumerate(lines, 1) if line.startswith(("def ", "@njit")))
    assert lines[first - 1] == "def value_steps(_x, _out):" and first <= 40


@pytest.mark.parametrize("path", sorted(GENERATED.glob("*.py")), ids=lambda p: p.name)
def test_generated_files_hold_no_numba_internals(path):
    text = path.read_text(encoding="utf-8")
    for internal in ("numba.core", "cgutils", "intrinsic", "llvmlite", "typing_context"):
        assert internal not in text, internal


@pytest.mark.parametrize("path", sorted(GENERATED.glob("*.py")), ids=lambda p: p.name)
def test_generated_files_hold_only_the_kernels_of_their_programs(path):
    # After the imports, every statement defines or binds a kernel of one of the module's
    # programs (NAME_steps, NAME_row, ...), or is the Python backend's NumPy prelude: no
    # runtime code.
    tree = ast.parse(path.read_text(encoding="utf-8"))
    programs = _programs(tree)
    body = [node for node in tree.body[1:] if not isinstance(node, (ast.Import, ast.ImportFrom))]
    others = [ast.unparse(node)[:60] for node in body if not _kernel_name(node, programs)]
    assert len(body) > len(others)
    assert all(path.name.endswith("_python.py") and line.startswith("_")  # a prelude
               for line in others), others


def test_golden_modules_share_no_lines_beyond_imports_and_header():
    # Before the runtime moved out, two Numba goldens shared 235 lines of lowering. Now a line
    # two goldens share lies in kernels of theirs (programs of the same name, such as `value`,
    # have kernels alike, and every NAME_chunks has the same claim loop): outside the kernels,
    # a module holds only what is its own (the Python backend's prelude of the ops it uses).
    outside = {path.name: _outside_kernels(path) for path in sorted(GENERATED.glob("*.py"))}
    everything = {path.name: _lines(path) for path in sorted(GENERATED.glob("*.py"))}
    for a in outside:
        for b in outside:
            if a != b:
                assert not outside[a] & everything[b], (a, b, sorted(outside[a] & everything[b]))


def _lines(path: Path) -> set[str]:
    return {line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def _outside_kernels(path: Path) -> set[str]:
    """The module's non-blank lines after its docstring and imports that belong to no kernel
    (no function or binding named after one of its programs)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    programs = _programs(tree)
    start = next(node.lineno for node in tree.body[1:]
                 if not isinstance(node, (ast.Import, ast.ImportFrom)))
    inside = {k for node in tree.body if _kernel_name(node, programs)
              for k in range(node.lineno - len(getattr(node, "decorator_list", ())),
                             node.end_lineno + 1)}
    return {line for k, line in enumerate(text.splitlines()[start - 1:], start)
            if line.strip() and k not in inside}


def _programs(tree: ast.Module) -> set[str]:
    return {line.split(":")[0].strip() for line in ast.get_docstring(tree).splitlines()
            if line.startswith("    ") and ": _out = [" in line}


def _kernel_name(node: ast.stmt, programs: set[str]) -> bool:
    name = (node.name if isinstance(node, ast.FunctionDef)
            else node.targets[0].id if isinstance(node, ast.Assign) else "")
    return name.lstrip("_").rsplit("_", 1)[0] in programs
