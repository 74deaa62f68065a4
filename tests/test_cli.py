"""The `symgraph` command line: acceptance checks on the installed script, golden transcripts.

Most checks call `main([...])` in-process (fast); the few that must prove the installed console
script, `python -m symgraph`, or a fresh interpreter without symgraph run subprocesses.
`python -m pytest --update-golden` rewrites tests/golden/cli/*.txt; review the diff.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from symgraph.cli import main as cli
from symgraph.cli.main import main
from symgraph.ir.node import apply, symbols
from symgraph.pictures import draw

GOLDEN = Path(__file__).resolve().parent / "golden" / "cli"
SCRIPT = shutil.which("symgraph")
SEED = "x**2 + 2*x + 1"
needs_script = pytest.mark.skipif(SCRIPT is None, reason="the symgraph script is not installed")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def run_script(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- acceptance: the installed script --------------------------------------------------------


@needs_script
def test_installed_script_prints_the_seed_derivative_and_value_and_gradient():
    done = run_script("diff", SEED, "--wrt", "x")
    assert (done.returncode, done.stdout, done.stderr) == (0, "2*x + 2\n", "")
    done = run_script("grad", SEED, "--at", "x=3")
    assert (done.returncode, done.stdout, done.stderr) == (0, "f = 16\ndf/dx = 8\n", "")


@needs_script
def test_installed_script_reads_standard_input_and_reports_json():
    done = run_script("diff", "-", stdin="x**3\n")
    assert (done.returncode, done.stdout) == (0, "3*x**2\n")
    done = run_script("grad", "-", "--at", "x=3", "--json", stdin=SEED)
    data = json.loads(done.stdout)
    assert (data["value"], data["gradient"], data["variables"]) == (16, [8], ["x"])


def test_python_dash_m_runs_the_same_command_with_examples_in_help():
    done = subprocess.run([sys.executable, "-m", "symgraph", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0
    assert "examples:" in done.stdout and "symgraph grad" in done.stdout
    done = subprocess.run([sys.executable, "-m", "symgraph", "diff", SEED], capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "2*x + 2\n")


BAD_INPUTS = {
    "unknown function": ["grad", "foo(x) + 1", "--at", "x=1"],
    "unbalanced parenthesis": ["diff", "(x + 1"],
    "closing parenthesis": ["diff", "x + 1)"],
    "unknown variable in --at": ["grad", SEED, "--at", "x=3,z=1"],
    "missing variable in --at": ["grad", "x*y", "--at", "x=3"],
    "empty value": ["grad", SEED, "--at", "x="],
    "not a number": ["grad", SEED, "--at", "x=abc"],
    "no name": ["grad", SEED, "--at", "=3"],
    "given twice": ["grad", SEED, "--at", "x=1,x=2"],
    "unknown option": ["diff", SEED, "--frobnicate"],
}


@needs_script
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_paragraph_and_no_traceback(case):
    done = run_script(*BAD_INPUTS[case])
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    message = done.stderr.strip()
    assert message and "Traceback" not in message and "\n\n" not in message


@needs_script
def test_parse_errors_put_a_caret_under_the_bad_position():
    done = run_script("diff", "x + foo(y)")
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and "unknown function" in lines[0]
    shown, caret = lines[-2], lines[-1]
    assert caret.strip() == "^" and shown[caret.index("^"):].startswith("foo(y)")


def test_other_failures_exit_1_and_show_a_traceback_only_with_debug(capsys, monkeypatch):
    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setitem(cli.COMMANDS, "diff", broken)
    code, out, err = run_main(capsys, "diff", SEED)
    assert (code, out) == (1, "") and "boom" in err and "--debug" in err
    assert "Traceback" not in err
    code, out, err = run_main(capsys, "diff", SEED, "--debug")
    assert code == 1 and "Traceback" in err


# -- codegen: a module that runs without symgraph ------------------------------------------------

CHILD = textwrap.dedent("""
    import importlib.util, json, sys
    sys.modules["symgraph"] = None  # make sure the generated file never needs symgraph
    try:
        import symgraph  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("symgraph was importable")
    import numpy as np
    spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = np.zeros(1 + 4 + 16)
    module.value_grad_hess_row(np.array([2.0, 1.0, 1.0, 2.0]), out)
    print(json.dumps(out.tolist()))
""")


@needs_script
@pytest.mark.parametrize("backend", [["python"], ["python", "--standalone"],
                                     ["numba", "--standalone"]], ids=" ".join)
def test_codegen_output_runs_in_a_fresh_interpreter_without_symgraph(tmp_path, backend):
    expr = "(W*x + b - y_true)**2"
    target = tmp_path / "mse_kernels.py"
    done = run_script("codegen", expr, "--grad", "--hessian", "--backend", *backend, "-o",
                      str(target))
    assert done.returncode == 0, done.stderr
    source = target.read_text()
    imports = {line.split()[1] for line in source.splitlines()
               if line.startswith(("import ", "from "))}
    assert imports <= {"math", "numpy", "numba"}  # no symgraph, nothing of Numba's internals
    child = subprocess.run([sys.executable, "-I", "-c", CHILD, str(target)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    numbers = json.loads(child.stdout)
    expected = run_script("hessian", expr, "--at", "W=2,b=1,x=1,y_true=2", "--json")
    data = json.loads(expected.stdout)
    flat = [data["value"], *data["gradient"], *[v for row in data["hessian"] for v in row]]
    assert numbers == [float(v) for v in flat]
    assert data["value"] == 1 and data["gradient"][:2] == [2, 2]  # the text's numbers


def test_codegen_numba_writes_the_module_the_cache_loads(capsys):
    # Not standalone: it imports symgraph's Numba runtime, and is the very text `compile`
    # loads (so it shares Numba's cache with it when put there).
    import symgraph as sg

    code, out, _ = run_main(capsys, "codegen", "(W*x + b - y_true)**2", "--grad", "--backend",
                            "numba")
    assert code == 0
    assert "from symgraph.backends.numba.runtime import " in out
    W, b, x, y_true = sg.symbols("W b x y_true")
    fn = sg.compile((W * x + b - y_true) ** 2, [W, b, x, y_true])
    assert out == fn.source


def test_output_file_is_written_atomically_or_not_at_all(tmp_path, capsys):
    target = tmp_path / "out.py"
    code, _, err = run_main(capsys, "codegen", "x + (", "-o", str(target))
    assert code == 2 and not target.exists()
    target.write_text("previous\n")
    code, _, _ = run_main(capsys, "codegen", "sin(", "-o", str(target))
    assert code == 2 and target.read_text() == "previous\n"
    code, _, err = run_main(capsys, "codegen", SEED, "-o", str(tmp_path))  # a folder
    assert code == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.py"]  # no temporary left
    code, out, _ = run_main(capsys, "codegen", SEED, "--grad", "-o", str(target))
    assert code == 0 and out == "" and "def value_grad_row" in target.read_text()


# -- graph pictures --------------------------------------------------------------------------


def test_graph_of_linear_model_has_the_texts_structure(capsys):
    code, out, _ = run_main(capsys, "graph", "y = W*x + b")
    assert code == 0
    assert out == textwrap.dedent("""\
        Input (W) ---*
        Input (x) ---*
                     |--> Multiply (W*x) ---*
        Input (b) --------------------------*
                                            |--> Add (W*x + b) --> Output (y)
        """)
    code, out, _ = run_main(capsys, "graph", "y = W*x + b", "--format", "dot")
    edges = {line.strip().rstrip(";") for line in out.splitlines() if "->" in line}
    labels = dict(line.strip().split(" [label=", 1) for line in out.splitlines()
                  if "[label=" in line and "->" not in line)
    by_label = {v.split('"')[1]: k for k, v in labels.items()}
    W, x, b = by_label["Input (W)"], by_label["Input (x)"], by_label["Input (b)"]
    mul, add, y = by_label["Multiply (W*x)"], by_label["Add (W*x + b)"], by_label["Output (y)"]
    assert edges == {f"{W} -> {mul}", f"{x} -> {mul}", f"{mul} -> {add}", f"{b} -> {add}",
                     f"{add} -> {y}"}


def test_grad_graph_marks_derivative_nodes_and_names_shared_ones(capsys):
    code, out, _ = run_main(capsys, "graph", SEED, "--grad")
    assert code == 0
    assert "[t0] Multiply (2*x)" in out and "[grad]" in out
    assert out.count("[t0]") >= 2  # drawn once, then referred to by name
    code, out, _ = run_main(capsys, "graph", SEED, "--grad", "--format", "dot")
    shared = [line for line in out.splitlines() if 'label="Multiply (2*x)"' in line]
    ident = shared[0].split()[0]
    assert sum(1 for line in out.splitlines() if line.strip().startswith(f"{ident} ->")) == 2
    assert "#fbd5b0" in out  # derivative nodes are filled orange


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_dot
def test_png_and_svg_pictures_through_graphviz(tmp_path, capsys):
    target = tmp_path / "mse.png"
    code, _, err = run_main(capsys, "graph", "(W*x + b - y_true)**2", "--grad", "--format",
                            "png", "-o", str(target))
    assert code == 0, err
    width, height = png_size(target.read_bytes())
    assert width > 0 and height > 0 and target.stat().st_size > 1000
    code, out, _ = run_main(capsys, "graph", SEED, "--format", "svg")
    assert code == 0 and "<svg" in out and "Multiply" in out
    x = symbols("x")
    assert "<svg" in draw.to_svg(x**2 + 2 * x + 1)
    assert "<svg" in draw.to_svg([x**2, apply("sin", x)], grad=True)


def test_missing_graphviz_gives_an_install_hint_and_no_svg(capsys, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "dot" else real_which(name))
    code, out, err = run_main(capsys, "graph", SEED, "--format", "svg")
    assert code == 1 and out == ""
    assert "apt-get install graphviz" in err and "brew install graphviz" in err
    x = symbols("x")
    assert draw.to_svg(x + 1) is None
    code, out, _ = run_main(capsys, "graph", SEED, "--format", "dot")  # needs nothing
    assert code == 0 and out.startswith("digraph")


def test_deep_graphs_draw_without_recursion():
    x = symbols("x")
    deep = x
    for _ in range(20_000):
        deep = apply("sin", deep)
    dot = draw.to_dot(deep)
    assert dot.count("->") == 20_001
    chain = x
    for _ in range(200):
        chain = apply("exp", chain) * x
    assert draw.to_ascii(chain).count("Output (f)") == 1


def test_too_deep_for_ascii_says_to_use_dot(tmp_path, capsys):
    expr = tmp_path / "deep.txt"
    expr.write_text("sin(" * 3000 + "x" + ")" * 3000)
    code, out, err = run_main(capsys, "graph", "-f", str(expr), "--grad")
    assert code == 1 and out == "" and "--format dot" in err
    code, out, _ = run_main(capsys, "graph", "-f", str(expr), "--grad", "--format", "dot")
    assert code == 0 and out.count("->") > 6000
    code, out, err = run_main(capsys, "diff", "-f", str(expr))
    assert code == 1 and "--cse" in err  # the tree form is far too long; the shared one is not
    code, out, _ = run_main(capsys, "diff", "-f", str(expr), "--cse")
    assert code == 0 and out.splitlines()[-1].startswith("df/dx = ")


def test_help_of_every_subcommand_has_examples(capsys):
    for command in ["diff", "grad", "hessian", "jacobian", "codegen", "graph"]:
        code, out, _ = run_main(capsys, command, "--help")
        assert code == 0 and "examples:" in out and "symgraph diff" in out


# -- golden transcripts: every subcommand and format on a handful of expressions -------------


def shared_terms(n: int = 50) -> str:
    """A 50-term sum whose terms all share sin(x*y): the DAG stays small, the text does not."""
    text = "sin(x*y)"
    for k in range(2, n + 1):
        text += f" {'-' if k % 2 == 0 else '+'} sin(x*y)**{k}"
    return text


CASES = {
    "seed": (SEED, "x=3"),
    "mse": ("loss = (W*x + b - y_true)**2", "W=2,b=1,x=1,y_true=2"),
    "where": ("where(x > y, x*y, sin(x)) + y**2", "x=2,y=0.5"),
    "shared50": (shared_terms(), "x=0.5,y=0.25"),
}
VARIANTS = [
    ["diff"], ["diff", "--cse"], ["diff", "--format", "latex"], ["diff", "--format", "sympy"],
    ["diff", "--format", "python"], ["diff", "--format", "json"], ["diff", "--order", "2"],
    ["grad", "--at", "{at}"], ["grad", "--at", "{at}", "--json"],
    ["hessian", "--at", "{at}"], ["hessian", "--at", "{at}", "--json"],
    ["jacobian", "--at", "{at}"], ["jacobian", "--at", "{at}", "--json"],
    ["codegen", "--grad"], ["codegen", "--grad", "--hessian", "--backend", "numba"],
    ["codegen", "--grad", "--backend", "numba", "--standalone"],
    ["graph"], ["graph", "--grad"], ["graph", "--format", "dot"],
    ["graph", "--grad", "--format", "dot"],
]


def transcript(capsys, case: str) -> str:
    expr, at = CASES[case]
    expr_file = GOLDEN / f"{case}.expr"
    use_file = len(expr) > 80  # long expressions are read from a file beside the transcript
    sections = []
    for variant in VARIANTS:
        rest = [a.format(at=at) for a in variant[1:]]
        code, out, err = run_main(capsys, variant[0], *(["-f", str(expr_file)] if use_file
                                                        else [expr]), *rest)
        shown = [variant[0], *(["-f", expr_file.name] if use_file else [expr]), *rest]
        header = "$ symgraph " + " ".join(shlex.quote(a) for a in shown)
        status = "" if code == 0 else f"[exit {code}] {err}"
        # The runtime's digest changes with every edit of the runtime, not of the CLI.
        out = re.sub(r"^# runtime [0-9a-f]{24}:", "# runtime <digest>:", out, flags=re.MULTILINE)
        sections.append(f"{header}\n{out}{status}")
    return "\n".join(sections)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_transcript(case, capsys, update_golden):
    expr_file = GOLDEN / f"{case}.expr"
    if len(CASES[case][0]) > 80:
        if update_golden:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            expr_file.write_text(CASES[case][0] + "\n", encoding="utf-8")
        assert expr_file.read_text(encoding="utf-8") == CASES[case][0] + "\n"
    text = transcript(capsys, case)
    golden = GOLDEN / f"{case}.txt"
    if update_golden:
        golden.write_text(text, encoding="utf-8")
    expected = golden.read_text(encoding="utf-8")
    if text != expected:
        wrong = [a.splitlines()[0] for a, b in zip(text.split("\n$ "), expected.split("\n$ "))
                 if a != b]
        assert text == expected, f"changed sections: {wrong}"
    assert "[exit" not in text  # every variant succeeds on every golden expression


def test_golden_outputs_are_consistent_with_each_other(capsys):
    code, out, _ = run_main(capsys, "diff", "x**2*y + sin(y)", "--format", "json")
    data = json.loads(out)
    assert [d["name"] for d in data["derivatives"]] == ["df/dx", "df/dy"]
    assert data["schema"] == 1 and data["cse"].rstrip().splitlines()[-1].startswith("df/dy =")
    code, out, _ = run_main(capsys, "diff", "x**2*y + sin(y)", "--format", "python")
    namespace: dict = {}
    exec(compile(out, "<diff>", "exec"), namespace)  # our own generated code, not user text
    assert namespace["derivatives"](3.0, 2.0) == pytest.approx((12.0, 9.0 + math.cos(2.0)))


def test_precompile_leaves_every_tape_entry_point_compiled_and_a_second_run_compiles_nothing(
        capsys):
    from symgraph.backends.tape import builder as tape
    from symgraph.backends.tape import interpreter as tape_interpreter
    from symgraph.backends.tape import passes as tape_passes

    code, out, _ = run_main(capsys, "precompile")
    assert code == 0 and "compiled" in out
    for function in (tape_passes.fuse, tape_passes.cluster_order, tape_passes.linear_scan,
                     tape_passes.split_blocks, tape_passes.tape_values,
                     tape_passes.depth_first_order, tape_interpreter.run_row,
                     tape_interpreter.run_batch, tape_interpreter.run_points):
        assert function.overloads, function.__name__
    assert tape.precompile() == 0
    code, out, _ = run_main(capsys, "precompile")
    assert (code, out.startswith("the tape's Numba code was compiled already")) == (0, True)
