"""Shared test setup: a private kernel cache per run, the --update-golden switch, and the test
tiers.

Tiers: a test is marked `numba` when it compiles Numba code (or loads it) and `slow` when it
takes seconds without that, so `python -m pytest -m "not numba and not slow"` is the
pure-Python tier. Marks come from the rules below: what a test is parametrised with, which
fixtures it uses, which file it is in, words in its name, and short lists of the tests no rule
can tell, so test files need no marks of their own (an explicit `pytest.mark.numba` or
`pytest.mark.slow` in a test file works too).

`SYMGRAPH_CHECK_TIERS=1` checks the marks: Numba gets an empty cache folder, and the run fails
if Numba compiled anything during a test not marked `numba`; a test marked neither that runs
longer than `SLOW_SECONDS` is listed. The rules stay honest as tests are added.
"""

from __future__ import annotations

import os
import tempfile
import time

import pytest

# Parameter values that mean Numba code runs: the backend (lane templates call vecmath's njit
# functions), and strategies whose kernels are Numba's (the "straight" strategy's default
# backend is Numba; the tape is a Numba interpreter).
NUMBA_PARAMS = {"backend": {"numba", "lanes"}, "strategy": {"straight", "tape"}}
# Fixtures that compile Numba code (in the test process or in subprocesses).
NUMBA_FIXTURES = {"use_kernel", "first_run", "client", "example_outputs", "faulted", "full_disk"}
# Files of the Numba backend's own tests: nearly every test there compiles or runs Numba code.
NUMBA_FILES = {"test_batching.py", "test_emit_batch.py", "test_numba_cache.py", "test_tape.py",
               "test_warm_process.py", "test_tape_passes.py", "test_vecmath.py", "test_dask.py",
               "test_vecmath_gamma.py"}
# A test whose name mentions Numba or its lane kernels runs them ("..._with_numba_kernel_...",
# "numbas_own_compile", "..._rows_and_lanes"); so does every test of a file named for Numba.
NUMBA_WORDS = ("numba", "lane")
# Tests the rules cannot tell: they compile with the default backend (Numba), by file.
NUMBA_TESTS = {  # (a name, or a name[parameter id])
    # cbrt's Numba template calls symgraph's own @njit cube root (vecmath.vcbrt)
    "test_ops.py": {"test_template_computes_evaluate[cbrt-1-nb]",
                    "test_template_accepts_literal_operands[cbrt-1-nb]",
                    # pow's lane template calls vecmath's @njit vpow
                    "test_pow_template_with_negative_literal_base"},
    "test_api.py": {"test_tape_strategy_agrees_with_straight_line_kernels_and_prints_its_steps"},
    "test_cli.py": {
        "test_precompile_leaves_every_tape_entry_point_compiled_and_a_second_run_compiles_nothing",
    },
    "test_emit.py": {"test_row_kernels_read_every_input_before_writing_an_output",
                     "test_row_kernels_take_strided_and_float32_arrays"},
    "test_expression_cache.py": {
        "test_tapes_are_read_back_and_print_as_before",
        "test_arguments_and_options_each_have_their_own_record",
        "test_a_damaged_record_is_rebuilt_and_replaced",
        "test_a_record_whose_module_file_is_gone_is_rebuilt",
        "test_records_are_keyed_by_symgraphs_own_code",
        "test_programs_too_long_to_be_worth_keeping_are_not_kept",
    },
    "test_faults.py": {
        "test_a_tape_with_indices_outside_its_registers_is_refused_before_it_runs",
        "test_the_tape_interpreters_damaged_cache_files_read_as_absent_never_as_an_error",
        "test_a_read_only_install_without_a_writable_home_compiles_in_a_temporary_folder",
        "test_processes_sharing_one_cache_folder_all_get_the_right_numbers",
    },
    "test_outputs.py": {"test_api_batches_in_a_loop_give_fresh_results_each_time"},
    "test_sparse.py": {
        "test_rosenbrock_gradient_hessp_and_sparse_hessian_at_a_hundred_thousand_variables"},
    "test_register_op.py": {"test_cache_keys_and_sources_follow_the_table"},
    "test_tape_table.py": {"test_a_standard_tape_pickles_without_its_interpreters_source",
                           "test_a_registered_op_gets_the_next_code_and_is_refused_once_it_is_gone"},
}
# Slow without Numba: 100,000-deep expressions (every test whose name says "deep"), whole files
# of hypothesis runs and subprocesses, and single tests (by name, or name[parameter id]).
SLOW_WORD = "deep"
SLOW_FILES = {"test_deep.py", "test_properties.py", "test_benchmarks.py"}
SLOW_TESTS = {
    "test_parser.py": {"test_hostile_input_gives_a_node_or_a_positioned_parse_error[1MB-sum]",
                       "test_hostile_input_gives_a_node_or_a_positioned_parse_error[200k-term-sum]"},
    "test_sympy_bridge.py": {"test_round_trip_keeps_values"},
    "test_printer.py": {"test_parse_of_to_text_is_the_same_node"},
    "test_tidy.py": {"test_whole_corpus_partials_are_no_longer_than_sympys_and_agree",
                     "test_latex_of_corpus_derivatives_reads_back_to_their_values"},
    "test_emit.py": {"test_source_is_byte_identical_across_hash_seeds"},
    "test_cli.py": {"test_codegen_output_runs_in_a_fresh_interpreter_without_symgraph"},
    "test_faults.py": {"test_a_second_user_reuses_a_shared_cache_folder_without_rewriting_it"},
    "test_static_dynamic.py": {"test_example_prints_the_texts_numbers_and_a_diagram"},
    "test_op_table_complete.py": {"test_the_shared_strategy_draws_the_op"},
    "test_numpy_protocol.py": {"test_a_function_of_ten_thousand_elements_traces_without_recursion"},
    "test_branches.py": {
        "test_symbolic_derivatives_of_random_branches_follow_the_taken_branch",
        "test_python_backend_points_and_batches_of_random_branches_follow_the_taken_branch",
    },
    "test_sparse.py": {"test_rosenbrock_agrees_with_scipys_reference_functions[1000]"},
    "test_user_functions.py": {
        "test_the_gamma_regression_example_fits_and_agrees_with_scipy_stats"},
}
# In the check, a test marked neither that runs longer is reported (not failed: a loaded
# machine makes any test slow).
SLOW_SECONDS = 2.0

CHECK = os.environ.get("SYMGRAPH_CHECK_TIERS") == "1"
if CHECK:  # before anything imports Numba: nothing may come from an earlier run's cache
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="symgraph-numba-check-")


# Worker processes: the whole suite (no paths given, as `python -m pytest -q` in the README and
# CI) runs on up to MAX_WORKERS processes when pytest-xdist is installed (the test extra has
# it) and the machine has the cores; each worker compiles what it runs (the tape interpreter
# too, or loads it from Numba's cache folder that all share). One process otherwise: with a
# path or -n given, `-p no:xdist`, the tier check (its compile counts are per process) or
# SYMGRAPH_TEST_WORKERS=0 (a number there sets the worker count).
MAX_WORKERS = 2


def _workers(config) -> int:
    wanted = os.environ.get("SYMGRAPH_TEST_WORKERS")
    if CHECK:
        return 0
    if wanted is not None:
        return int(wanted)
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, MAX_WORKERS) if (cores or 1) >= 2 else 0


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if (not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER")
            or config.getoption("numprocesses", None) is not None
            or config.getoption("collectonly") or config.getoption("usepdb")):
        return
    workers = _workers(config)
    if workers >= 2:
        config.option.numprocesses = workers
        config.option.dist = "worksteal"  # tests' times differ by 1000x: idle workers steal


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden files from the current output (review the diff!)")


def _is_numba(item: pytest.Item, file: str) -> bool:
    if file in NUMBA_FILES or "numba" in file or any(w in item.name.lower() for w in NUMBA_WORDS):
        return True
    if _base_name(item) in NUMBA_TESTS.get(file, ()) or item.name in NUMBA_TESTS.get(file, ()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name, values in NUMBA_PARAMS.items():
        value = params.get(name)
        if isinstance(value, str) and value in values:
            return True
    return bool(NUMBA_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def _base_name(item: pytest.Item) -> str:
    return getattr(item, "originalname", None) or item.name  # without [parameter ids]


def _is_slow(item: pytest.Item, file: str) -> bool:
    named = SLOW_TESTS.get(file, ())
    return (file in SLOW_FILES or SLOW_WORD in _base_name(item)
            or _base_name(item) in named or item.name in named)


def pytest_collection_modifyitems(config, items):
    numba = set()
    for item in items:
        file = item.path.name
        if _is_numba(item, file):
            item.add_marker(pytest.mark.numba)
            numba.add(item.nodeid)
        if _is_slow(item, file):
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Workers: the Numba tests first (stable), so the first worker gets them and the
        # second the pure-Python ones: one compiles the tape interpreter, and the other loads
        # it from the shared cache when it steals Numba tests later, instead of compiling too.
        items.sort(key=lambda item: item.nodeid not in numba)


class _CompileWatch:
    """Counts Numba compilations (cache misses: loading from Numba's cache is not one)."""

    def __init__(self):
        from numba.core import event

        self.count = 0
        watch = self

        class Listener(event.Listener):
            def on_start(self, data):
                watch.count += 1

            def on_end(self, data):
                pass

        event.register("numba:compile", Listener())


_watch: _CompileWatch | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _watch
    if not CHECK:
        yield
        return
    if _watch is None:
        _watch = _CompileWatch()
    before, start = _watch.count, time.perf_counter()
    yield
    compiled, seconds = _watch.count - before, time.perf_counter() - start
    marks = {m.name for m in item.iter_markers()}
    problem = note = None
    if compiled and "numba" not in marks:
        problem = f"compiled {compiled} Numba function(s) but is not marked numba"
    elif seconds > SLOW_SECONDS and not marks & {"numba", "slow"}:
        note = f"took {seconds:.1f} s but is marked neither slow nor numba"
    report = os.environ.get("SYMGRAPH_TIER_REPORT")
    if report:  # one line a test, to tune the rules
        with open(report, "a", encoding="utf-8") as out:
            out.write(f"{compiled}\t{seconds:.3f}\t{','.join(sorted(marks))}\t{item.nodeid}\n")
    if problem:
        item.config.stash.setdefault(_PROBLEMS, []).append(f"{item.nodeid}: {problem}")
    if note:
        item.config.stash.setdefault(_NOTES, []).append(f"{item.nodeid}: {note}")


_PROBLEMS = pytest.StashKey[list]()
_NOTES = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not CHECK:
        return
    problems, notes = config.stash.get(_PROBLEMS, []), config.stash.get(_NOTES, [])
    terminalreporter.write_sep("=", f"tier check: {len(problems)} wrong mark(s), "
                                    f"{len(notes)} unmarked test(s) over {SLOW_SECONDS} s")
    for line in problems + notes:
        terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    if CHECK and session.config.stash.get(_PROBLEMS, []) and exitstatus == 0:
        session.exitstatus = 1


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Generated modules go to a fresh folder, so runs never see each other's kernels."""
    folder = tmp_path_factory.mktemp("symgraph-cache")
    old = os.environ.get("SYMGRAPH_CACHE_DIR")
    os.environ["SYMGRAPH_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SYMGRAPH_CACHE_DIR", None)
    else:
        os.environ["SYMGRAPH_CACHE_DIR"] = old


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
