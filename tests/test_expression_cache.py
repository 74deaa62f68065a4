"""Compiling an expression again reads its programs, module and tapes back from the cache
folder (symgraph.runtime.expression_cache) instead of differentiating and generating code, with the
same kernels and numbers; a damaged or incomplete record is rebuilt."""

import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.tape import builder as tape
from symgraph.runtime import build, expression_cache

x, y = sg.symbols("x y")
EXPR = sg.exp(x * y) + x**3 / y + sg.sin(y)
POINT = (0.7, 1.3)
X = np.random.default_rng(3).random((50, 2)) + 0.5


def _records(folder):
    return sorted(folder.glob("expr_*.json"))


def _no_rebuilding(monkeypatch):
    def fail(*_, **__):
        raise AssertionError("rebuilt what the cache holds")

    monkeypatch.setattr(build, "build_programs", fail)
    monkeypatch.setattr(tape, "build_tape", fail)


@pytest.mark.parametrize("backend", ["numba", "python"])
def test_compiling_again_reads_programs_and_module_back_without_differentiating(
        tmp_path, monkeypatch, backend):
    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path, backend=backend)
    assert len(_records(tmp_path)) == 1
    assert first.source  # (Numba: interpreted first; asking for it makes the module, kept)
    _no_rebuilding(monkeypatch)
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path, backend=backend)
    assert again.programs == first.programs and first.programs == again.programs
    assert hash(again.programs[0]) == hash(first.programs[0])
    assert again.source == first.source and again.path == first.path
    assert again.value_and_grad(*POINT)[0] == first.value_and_grad(*POINT)[0]
    np.testing.assert_array_equal(again.value_and_grad(X)[1], first.value_and_grad(X)[1])


def test_tapes_are_read_back_and_print_as_before(tmp_path, monkeypatch):
    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path, strategy="tape")
    expected = first.value_and_grad(X)
    assert len(list(tmp_path.glob("tape_*.npz"))) == 1  # tapes are built (and kept) when used
    first_source = first.source  # prints every tape: builds the value's too
    assert len(list(tmp_path.glob("tape_*.npz"))) == 2
    _no_rebuilding(monkeypatch)
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path, strategy="tape")
    for got, want in zip(again.value_and_grad(X), expected):
        np.testing.assert_array_equal(got, want)
    # Run, a tape read back never decoded its program's steps; printed, it shows them.
    assert not any("steps" in vars(p) for p in again.programs)
    assert again.strategy == "tape" and again.source == first_source


def test_arguments_and_options_each_have_their_own_record(tmp_path):
    variants = [dict(args=[x, y]), dict(args=[y, x]), dict(args=[x, y], wrt=[x]),
                dict(args=[x, y], hessian=True), dict(args=[x, y], backend="python"),
                dict(args=[x, y], strategy="tape")]
    for _ in range(2):  # built, then read back: each variant must find its own record
        for options in variants:
            fn = sg.compile(EXPR, cache_dir=tmp_path, **options)
            a, b = POINT if options["args"][0] is x else POINT[::-1]
            value, grad = fn.value_and_grad(a, b)
            assert grad.shape == (len(options.get("wrt", options["args"])),)
            assert value == pytest.approx(np.exp(0.7 * 1.3) + 0.7**3 / 1.3 + np.sin(1.3))
        assert len(_records(tmp_path)) == len(variants)
    assert sg.compile([EXPR, x * y], [x, y], cache_dir=tmp_path).jacobian(*POINT).shape == (2, 2)


def test_a_damaged_record_is_rebuilt_and_replaced(tmp_path):
    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    [record] = _records(tmp_path)
    record.write_text('{"programs": [["not", "a program"]]')
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    assert again.programs == first.programs
    assert expression_cache.load_programs(tmp_path, record.stem[len("expr_"):]) is not None


def test_a_record_whose_module_file_is_gone_is_rebuilt(tmp_path):
    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    first.path.unlink()
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    assert again.path.read_text() == first.source
    assert again.value_and_grad(*POINT)[0] == first.value_and_grad(*POINT)[0]


def test_records_are_keyed_by_symgraphs_own_code(tmp_path, monkeypatch):
    sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    monkeypatch.setattr(expression_cache, "code_fingerprint", lambda: "another symgraph")
    sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    assert len(_records(tmp_path)) == 2


def test_the_code_fingerprint_covers_every_module_of_the_package_subfolders_included(tmp_path):
    package = Path(sg.__file__).resolve().parent
    copy = tmp_path / "symgraph"
    for path in package.rglob("*.py"):
        target = copy / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    assert expression_cache.fingerprint_of(copy) == expression_cache.code_fingerprint()
    seen = {expression_cache.fingerprint_of(copy)}
    for module in ("api.py", "ir/ops.py", "backends/numba/runtime/lanes.py",
                   "backends/tape/standard.py"):
        with open(copy / module, "a", encoding="utf-8") as handle:
            handle.write("\n# edited\n")
        seen.add(expression_cache.fingerprint_of(copy))
    assert len(seen) == 5  # each edit, however deep, makes another fingerprint


def test_a_signed_record_whose_census_or_steps_do_not_match_is_refused(tmp_path):
    import json

    fn = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    expected = fn.programs
    [path] = _records(tmp_path)
    key = path.stem[len("expr_"):]

    def signed(change):  # (the record's line, then its programs' steps as JSON text)
        _, _, body = path.read_bytes().partition(b"\n")
        head, _, texts = body.partition(b"\n")
        record = json.loads(head)
        for p in record["programs"]:
            p["steps"], texts = texts[:p["steps"]].decode(), texts[p["steps"]:]
        change(record["programs"][0])
        texts = [p["steps"].encode() for p in record["programs"]]
        for p, text in zip(record["programs"], texts):
            p["steps"] = len(text)
        body = json.dumps(record).encode() + b"\n" + b"".join(texts)
        path.write_bytes(expression_cache._digest(key, body).encode() + b"\n" + body)

    original = path.read_bytes()
    signed(lambda p: p["census"][0].__setitem__(3, p["census"][0][3] + 1))  # a step too many
    assert expression_cache.load_programs(tmp_path, key) is None
    path.write_bytes(original)
    signed(lambda p: p.update(steps=json.dumps(json.loads(p["steps"])[:-1])))  # one too few
    [broken, _], _ = expression_cache.load_programs(tmp_path, key)
    with pytest.raises(ValueError, match="damaged steps"):
        broken.steps  # noqa: B018
    path.write_bytes(original)
    signed(lambda p: p.update(steps=p["steps"] + " "))  # sizes beyond the file's end
    record = path.read_bytes()
    path.write_bytes(record[:-1])
    assert expression_cache.load_programs(tmp_path, key) is None  # (digest: damaged)
    _, _, body = record[:-1].partition(b"\n")
    path.write_bytes(expression_cache._digest(key, body).encode() + b"\n" + body)
    assert expression_cache.load_programs(tmp_path, key) is None  # signed, yet short
    path.write_bytes(original)
    assert sg.compile(EXPR, [x, y], cache_dir=tmp_path).programs == expected


def test_programs_too_long_to_be_worth_keeping_are_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(expression_cache, "MAX_RECORD_STEPS", 3)
    fn = sg.compile(EXPR, [x, y], cache_dir=tmp_path, strategy="tape")
    fn.value_and_grad(X)
    assert not _records(tmp_path) and not list(tmp_path.glob("tape_*.npz"))


def test_typed_operands_survive_a_record_exactly(tmp_path):
    from symgraph.lower.schedule import CONST, NAME, Operand, Program, Step

    special = [Operand(CONST, v) for v in (-0.0, float("inf"), -float("inf"), 0.1, 1e-310)]
    steps = (Step("t0", "add", (Operand(NAME, "a"), Operand(NAME, "b", True), *special), "a-b"),
             Step("t1", "mul", (Operand(NAME, "t0"), Operand(CONST, float("nan")))))
    program = Program("value", ("a", "b"), steps,
                      (("f", Operand(NAME, "t1")), ("g", Operand(CONST, 2.0))))
    expression_cache.save_programs(tmp_path, "k", [program], strategy="straight")
    [again], record = expression_cache.load_programs(tmp_path, "k")
    assert record == {"strategy": "straight"}
    # Sizes come from the kept census: the steps are decoded only when asked for.
    assert (again.census, again.op_count, again.cost) == (
        program.census, program.op_count, program.cost)
    assert "steps" not in vars(again)
    assert again.steps[0] == steps[0] and again.outputs == program.outputs
    got = [o.value for o in again.steps[0].operands[2:]]
    assert [v.hex() for v in got] == [o.value.hex() for o in special]  # -0.0 stays -0.0
    assert again.steps[1].operands[1].kind == CONST and np.isnan(again.steps[1].operands[1].value)
    assert all(type(o.value) is float for o in special)


def _interpreter_modules(folder):
    return {p.name: p for p in folder.glob("sg_*.py") if "numba" not in p.read_text()}


def test_each_program_interprets_from_its_own_module_and_a_gradient_imports_only_its_own(
        tmp_path, monkeypatch):

    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    modules = _interpreter_modules(tmp_path)
    assert len(modules) == 2  # the value's and the value+gradient's
    texts = {name: path.read_text() for name, path in modules.items()}
    assert sum("def value_row(" in t for t in texts.values()) == 1
    assert sum("def value_grad_row(" in t for t in texts.values()) == 1
    imported = []
    load = build.load_kept  # (kept files: imported from their kept bytecode)
    monkeypatch.setattr(build, "load_kept", lambda folder, name, *a, **k: imported.append(
        name) or load(folder, name, *a, **k))
    _no_rebuilding(monkeypatch)
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    assert imported == []  # kept: nothing read or imported before a call
    value, grad = again.value_and_grad(*POINT)
    assert [texts[name].count("def value_grad_row(") for name in imported] == [1]
    assert again._built._built is None  # interpreted
    v1, g1 = first.value_and_grad(*POINT)
    assert value == v1 and grad.tolist() == g1.tolist()


def test_a_damaged_interpreter_module_is_rendered_again_on_first_use_with_the_same_numbers(
        tmp_path):
    first = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    value, grad = first.value_and_grad(*POINT)
    only = first(*POINT)
    for path in _interpreter_modules(tmp_path).values():
        path.write_text(path.read_text().replace("_out[0] =", "_out[0] = 1.0 +"))
        sys.modules.pop(f"symgraph_generated_{path.stem[3:]}")  # (as in a second process)
    again = sg.compile(EXPR, [x, y], cache_dir=tmp_path)
    v2, g2 = again.value_and_grad(*POINT)
    assert again(*POINT) == only == value
    assert again._built._built is None  # interpreted, from modules written anew
    assert v2 == value and g2.tolist() == grad.tolist()
    assert "_out[0] = 1.0 +" not in "".join(
        p.read_text() for p in _interpreter_modules(tmp_path).values())
