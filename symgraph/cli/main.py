"""The `symgraph` command: derivative formulas, values at a point, generated code, pictures.

Exit codes: 0 success; 2 usage or input error (bad option, expression that does not parse,
malformed ``--at``), printed as one paragraph with a caret under the bad position; 1 any other
failure (Graphviz missing, file not writable, output too large, internal error). Only
``--debug`` shows a traceback. Output formats and the JSON schema: `symgraph.cli_format`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from ..ad.differentiate import MAX_ORDER
from ..backends.registry import BACKENDS
from ..frontends.userfunctions import UndefinedFunctionError
from ..ir.evaluate import free_symbols
from ..ir.node import symbol
from ..pictures import draw
from . import format as fmt
from .input import Failure, UsageError, parse_point, read_expressions, variables_of

PROG = "symgraph"
EPILOG = """\
examples:
  symgraph diff "x**2 + 2*x + 1" --wrt x          # prints 2*x + 2
  symgraph diff "x**2*y + sin(y)"                 # df/dx = ..., df/dy = ...
  symgraph diff "exp(x)*sin(exp(x))" --cse        # shared form: t0 = exp(x), ...
  symgraph diff "tanh(x)" --order 2 --format latex
  symgraph grad "x**2 + 2*x + 1" --at x=3         # f = 16, df/dx = 8
  symgraph hessian "x**2*y" --at x=1,y=2 --json
  symgraph jacobian "x*y" "x + y" --at x=1,y=2
  symgraph codegen "loss = (W*x + b - y_true)**2" --grad --backend numba --standalone -o loss.py
  symgraph graph "y = W*x + b"                    # ASCII picture of the graph
  symgraph graph "(W*x + b - y_true)**2" --grad --format svg -o mse.svg
  echo "x**3" | symgraph diff -                   # the expression from standard input
  symgraph diff "E - e*sin(E) - M" --wrt E,e,M    # names given are variables, even E and e

An expression may start with a name, "loss = ...", that labels its output (default f).
Files (-f) and standard input hold one expression per line; blank lines and lines starting
with # are skipped. The names pi, e, E (Euler's number), inf, oo and nan are constants
unless --wrt or --at names them. Put -- before an expression that starts with '-': diff -- "-x**2".
Exit codes: 0 success, 2 usage or parse error, 1 other failure. Docs: docs/cli.md.
"""


# -- commands ------------------------------------------------------------------------------------


def cmd_diff(args: argparse.Namespace) -> str:
    from ..ad.differentiate import diff

    if args.json:
        args.format = "json"
    if args.cse and args.format in ("latex", "sympy"):
        raise UsageError("--cse works with --format text, python or json")
    (name,), (f,) = read_expressions(args)
    variables = variables_of(args, [f])
    if not variables:
        raise UsageError("the expression has no variables to differentiate by")
    order = args.order
    derivatives = [diff(f, symbol(v), order) for v in variables]
    labels = [draw.derivative_label(name, v, order) for v in variables]
    if args.format == "json":
        return fmt.diff_json(name, f, variables, order, labels, derivatives,
                             [fmt.tidy(d) for d in derivatives])
    if args.format == "python":
        return fmt.diff_python(name, fmt.formula(f), free_symbols([f]), variables, order,
                               derivatives)
    if args.cse:
        return fmt.diff_cse(labels, derivatives)
    derivatives = [fmt.tidy(d) for d in derivatives]  # tree forms: flat sums and products
    if args.format == "latex":
        return fmt.diff_latex(name, variables, order, derivatives)
    if args.format == "sympy":
        return fmt.diff_sympy(labels, derivatives)
    return fmt.diff_text(labels, derivatives)


def _evaluate(args: argparse.Namespace, command: str) -> str:
    from ..api import compile as compile_expression

    names, exprs = read_expressions(args, "many" if command == "jacobian" else "one")
    inputs = [s.value for s in free_symbols(exprs)]
    variables = variables_of(args, exprs)
    point = parse_point(args.at, inputs)
    values = [point[n] for n in inputs]
    target = exprs if command == "jacobian" else exprs[0]
    fn = compile_expression(target, inputs, wrt=variables, backend=args.backend,
                            hessian=command == "hessian")
    results: dict = {"command": command, "names": names, "variables": variables,
                     "backend": args.backend, "point": point}
    if command == "jacobian":
        results["value"] = [float(v) for v in fn(*values)]
        results["jacobian"] = fn.jacobian(*values).tolist()
    else:
        value, gradient = fn.value_and_grad(*values)
        results["value"], results["gradient"] = float(value), gradient.tolist()
        if command == "hessian":
            results["hessian"] = fn.hessian(*values).tolist()
    return fmt.evaluation_json(results, exprs) if args.json else fmt.point_text(results)


def cmd_codegen(args: argparse.Namespace) -> str | None:
    from ..backends.registry import generate_source
    from ..lower.products import products_for

    names, exprs = read_expressions(args, "many")
    scalar = len(exprs) == 1
    if args.hessian and not scalar:
        raise UsageError("--hessian needs a single expression; use --grad for a Jacobian")
    inputs = free_symbols(exprs)
    variables = [symbol(v) for v in variables_of(args, exprs)]
    products = products_for(scalar, args.hessian, args.grad or args.hessian)
    source, programs = generate_source(exprs, inputs, variables, backend=args.backend,
                                       products=products, labels=names,
                                       standalone=args.standalone)
    return _emit(args, source, f"{args.backend} kernels: "
                 + ", ".join(p.name for p in programs))


def cmd_graph(args: argparse.Namespace) -> str | None:
    names, exprs = read_expressions(args, "many")
    variables = [symbol(v) for v in variables_of(args, exprs)] if args.grad else None
    picture = draw.scene(exprs, names, grad=args.grad, wrt=variables)
    if args.format == "ascii":
        try:
            return _emit(args, draw.to_ascii(picture), "an ASCII diagram")
        except draw.DiagramTooLarge as error:
            raise Failure(str(error)) from None
    dot_text = draw.to_dot(picture)
    if args.format == "dot":
        return _emit(args, dot_text, "Graphviz DOT text")
    try:
        data = draw.render(dot_text, args.format)
    except draw.GraphvizError as error:
        raise Failure(str(error)) from None
    if args.format == "svg":
        return _emit(args, data.decode("utf-8"), "an SVG picture")
    if args.output is None:
        if sys.stdout.isatty():
            raise UsageError("a PNG is binary: write it to a file with -o FILE.png")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return None
    from .output import write_output

    write_output(args.output, data)
    print(f"{PROG}: wrote {args.output} (a PNG picture)", file=sys.stderr)
    return None


def _emit(args: argparse.Namespace, text: str, what: str) -> str | None:
    """Text for standard output, or written to -o: atomically to a regular file (no partial
    file on failure), through to a device or FIFO (`output.write_output`)."""
    if getattr(args, "output", None) is None:
        return text
    from .output import write_output

    write_output(args.output, text)
    print(f"{PROG}: wrote {args.output} ({what})", file=sys.stderr)
    return None


def cmd_precompile(args: argparse.Namespace) -> str:
    import time

    from ..backends.numba import runtime
    from ..backends.tape.builder import precompile

    began = time.perf_counter()
    runtime.check()  # the Numba runtime's one-time self-check (~1 s): its verdict is kept
    compiled = precompile()
    seconds = time.perf_counter() - began
    if compiled == 0:
        return f"the tape's Numba code was compiled already (loaded in {seconds:.2f} s)\n"
    return (f"compiled the tape's Numba code ({compiled} functions) in {seconds:.1f} s, into "
            "Numba's on-disk cache: no tape on this machine waits for it now\n")


COMMANDS: dict[str, Callable[[argparse.Namespace], str | None]] = {
    "diff": cmd_diff, "codegen": cmd_codegen, "graph": cmd_graph, "precompile": cmd_precompile,
    "grad": lambda a: _evaluate(a, "grad"), "hessian": lambda a: _evaluate(a, "hessian"),
    "jacobian": lambda a: _evaluate(a, "jacobian"),
}


# -- the parser ----------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number 1 or more, not {text!r}")
    return value


def _order(text: str) -> int:
    value = _positive(text)
    if value > MAX_ORDER:
        raise argparse.ArgumentTypeError(f"at most {MAX_ORDER} (derivatives grow at least "
                                         f"quadratically with the order), not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from ..version import __version__

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=formatter, epilog=EPILOG,
        description="Symbolic derivatives of formulas: print them, evaluate them at a point, "
                    "generate Python/Numba code, draw the expression graph.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("exprs", nargs="*", metavar="EXPR",
                        help="expression text, e.g. \"x**2 + 2*x + 1\"; '-' reads stdin")
    common.add_argument("-f", "--file", metavar="FILE",
                        help="read expressions from FILE (one per line; '-' for stdin)")
    common.add_argument("--debug", action="store_true",
                        help="show the traceback when something fails")
    common.add_argument("--define", action="append", metavar="MODULE",
                        help="import MODULE first (a dotted name or a .py file) to declare "
                             "functions with symgraph.define_function (docs/functions.md)")
    wrt = argparse.ArgumentParser(add_help=False)
    wrt.add_argument("--wrt", action="append", metavar="X,Y",
                     help="differentiate by these variables, in this order (default: all, "
                          "sorted by name)")
    point = argparse.ArgumentParser(add_help=False)
    point.add_argument("--at", action="append", metavar="X=V,...", help="the point, e.g. x=3,y=2")
    point.add_argument("--backend", choices=sorted(BACKENDS), default="python",
                       help="kernel backend (default python: no JIT wait)")
    point.add_argument("--json", action="store_true", help="JSON output for scripts")
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("-o", "--output", metavar="FILE",
                        help="write to FILE (atomically) instead of standard output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, text: str, parents: list) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text, parents=parents,
                              formatter_class=formatter, epilog=EPILOG)

    p = add("diff", "print derivatives as formulas", [common, wrt])
    p.add_argument("--order", type=_order, default=1, metavar="N",
                   help="the N-th derivative by each variable (default 1)")
    p.add_argument("--cse", action="store_true",
                   help="shared form: named temporaries for repeated subexpressions")
    p.add_argument("--format", choices=["text", "latex", "sympy", "python", "json"],
                   default="text", help="output format (default text)")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    add("grad", "print the value and the gradient at a point", [common, wrt, point])
    add("hessian", "print the value, gradient and Hessian at a point", [common, wrt, point])
    add("jacobian", "print the values and the Jacobian of several expressions at a point "
        "(one EXPR argument or file line per expression)", [common, wrt, point])
    p = add("codegen", "write a Python/Numba kernel module (Python's import only math and "
            "NumPy; Numba's import symgraph's Numba runtime, or with --standalone only Numba)",
            [common, wrt, output])
    p.add_argument("--grad", action="store_true",
                   help="add gradient kernels (a Jacobian for several expressions)")
    p.add_argument("--hessian", action="store_true", help="add Hessian kernels")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="python",
                   help="; ".join(f"{b.name}: {b.about}" for b in BACKENDS.values())
                   + " (default python)")
    p.add_argument("--standalone", action="store_true",
                   help="numba: a module that needs only NumPy and Numba (no symgraph), whose "
                   "kernels compile slower; python modules always are")
    p = add("graph", "draw the expression graph (ASCII, DOT, SVG or PNG)", [common, wrt, output])
    p.add_argument("--grad", action="store_true",
                   help="also draw the derivative graph (derivative nodes marked)")
    p.add_argument("--format", choices=["ascii", "dot", "svg", "png"], default="ascii",
                   help="ascii and dot always work; svg and png need Graphviz (default ascii)")
    add("precompile", "compile symgraph's tape interpreter into Numba's cache and run the Numba "
        "runtime's self-check now (~10 s, once per machine), so the first expressions do not "
        "wait for them", [])
    return parser


# -- entry point -----------------------------------------------------------------------------


def _fail(command: str | None, message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    prefix = f"{PROG} {command}" if command else PROG
    print(f"{prefix}: error: {message}", file=sys.stderr)


def _import_definitions(module: str) -> None:
    """Import the user's module of function declarations (`--define`): a file or a name."""
    import importlib
    import importlib.util

    path = Path(module)
    try:
        if module.endswith(".py") or path.is_file():
            if not path.is_file():
                raise UsageError(f"--define {module}: no such file")
            spec = importlib.util.spec_from_file_location(f"_symgraph_define_{path.stem}", path)
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
        else:
            importlib.import_module(module)
    except UsageError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's module may fail any way
        raise UsageError(f"--define {module}: importing it failed: "
                         f"{type(error).__name__}: {error}") from None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    command = args = None
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # argparse printed help (0) or a usage message (2)
            return stop.code if isinstance(stop.code, int) else 2
        command = args.command
        if command is None:
            parser.print_help(sys.stderr)
            return 2
        for module in getattr(args, "define", None) or ():
            _import_definitions(module)
        text = COMMANDS[command](args)
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
        return 0
    except UsageError as error:
        _fail(command, str(error), debug)
        return 2
    except (Failure, fmt.OutputTooLarge) as error:
        _fail(command, str(error), debug)
        return 1
    except UndefinedFunctionError as error:
        _fail(command, str(error), debug)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `symgraph graph ... | head`: stop quietly
        try:
            sys.stdout = open(os.devnull, "w")  # keeps the interpreter's exit flush quiet
        except OSError:
            pass
        return 1
    except OSError as error:
        name = error.filename or ""
        if Path(str(name)).name.startswith(".tmp-"):  # write_atomically's temporary file:
            name = getattr(args, "output", None) or name  # the user named the target
        _fail(command, f"cannot write {name}: {error.strerror or error}" if name != (
            error.filename or "") else f"{error.strerror or error}: {name}".rstrip(": "), debug)
        return 1
    except Exception as error:  # the one place that turns bugs into a message
        detail = f"{type(error).__name__}: {error}"
        _fail(command, f"unexpected failure ({detail[:300]}); run again with --debug for the "
                       "traceback", debug)
        return 1


__all__ = ["main", "build_parser", "parse_point", "UsageError", "Failure"]
