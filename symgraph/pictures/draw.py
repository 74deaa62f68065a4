"""Pictures of expression DAGs: ASCII diagrams, Graphviz DOT text, and SVG/PNG through `dot`.

The ASCII diagram follows the computation-graph diagrams symgraph grew from: operands on the
left, each joined to the operation that consumes it, the output on the right::

    Input (W) ---*
    Input (x) ---*
                 |--> Multiply (W*x) ---*
    Input (b) --------------------------*
                                        |--> Add (W*x + b) --> Output (y)

An operation of one operand continues its operand's row (``Input (x) --> exp (exp(x))``).
A node used more than once is drawn once, named (``[t0] exp (exp(x))``), and later uses show
just its name ``[t0]``; derivative nodes (with ``grad=True``) carry ``[grad]``. In DOT every
node appears once, so a shared node is one box with several out-edges, and derivative nodes are
filled orange. Every walk here is iterative over a topological order (no recursion, so deep
graphs are fine) and the output is deterministic: identical text in every process.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ..ad.differentiate import grad as gradient_of
from ..ad.differentiate import jacobian as jacobian_of
from ..ir.evaluate import free_symbols
from ..ir.node import Node
from ..ir.ops import OPS
from ..ir.traversal import capped_tree_sizes, topological_order

LABEL_MAX_NODES = 7  # an operation's label shows its formula when the tree is this small...
LABEL_MAX_CHARS = 24  # ...and the formula this short
MIN_DASHES = 3
ASCII_MAX_CHARS = 8_000_000  # an upper bound on the diagram's size, checked before drawing
SVG_MAX_NODES = 400  # notebooks get no SVG for bigger graphs: Graphviz layout gets slow
DOT_TIMEOUT_SECONDS = 60
INSTALL_HINT = (
    "Graphviz's `dot` program draws SVG and PNG pictures, but it was not found on PATH. "
    "Install Graphviz (Debian/Ubuntu: `sudo apt-get install graphviz`; macOS: "
    "`brew install graphviz`; conda: `conda install -c conda-forge graphviz`; Windows: "
    "`winget install graphviz`), or use --format ascii or --format dot, which need nothing.")


class GraphvizError(RuntimeError):
    """`dot` is missing or failed; the message says what to do."""


class DiagramTooLarge(ValueError):
    """The ASCII layout of a deeply nested graph would be unreasonably large."""


@dataclass(frozen=True)
class Scene:
    """What to draw: labelled outputs, and which operation nodes belong to derivatives only."""

    outputs: tuple[tuple[str, Node], ...]
    derivative: frozenset[int]  # ids of nodes kept alive by `outputs`


def derivative_label(name: str, variable: str, order: int = 1) -> str:
    """``df/dx``, ``d^2f/dx^2``: the one spelling of derivative names in pictures and the CLI."""
    if order == 1:
        return f"d{name}/d{variable}"
    return f"d^{order}{name}/d{variable}^{order}"


def scene(exprs: Node | Sequence[Node], names: Sequence[str] | None = None, *,
          grad: bool = False, wrt: Sequence[Node] | None = None) -> Scene:
    """The outputs to draw: the expressions, and with `grad` their derivatives w.r.t. `wrt`."""
    roots = [exprs] if isinstance(exprs, Node) else list(exprs)
    if names is None:
        names = ["f"] if len(roots) == 1 else [f"f{i}" for i in range(len(roots))]
    outputs = list(zip(names, roots, strict=True))
    if not grad:
        return Scene(tuple(outputs), frozenset())
    variables = free_symbols(roots) if wrt is None else list(wrt)
    rows = [gradient_of(roots[0], variables)] if len(roots) == 1 else jacobian_of(
        roots, variables)
    for name, row in zip(names, rows):
        outputs += [(derivative_label(name, v.value), d) for v, d in zip(variables, row)]
    forward = {id(n) for n in topological_order(roots)}
    derivative = frozenset(id(n) for n in topological_order([d for _, d in outputs])
                           if n.args and id(n) not in forward)
    return Scene(tuple(outputs), derivative)


def _as_scene(picture: Scene | Node | Sequence[Node]) -> Scene:
    return picture if isinstance(picture, Scene) else scene(picture)


# -- labels ------------------------------------------------------------------------------------


def _labeller(order: list[Node]):
    from ..ir.printer import to_text  # imported on use: the printer is a sibling stage

    sizes = capped_tree_sizes(order, LABEL_MAX_NODES + 1)

    def label(node: Node) -> str:
        if node.op == "symbol":
            return f"Input ({node.value})"
        if node.op == "const":
            return f"Constant ({to_text(node)})"
        title = OPS[node.op].title  # Multiply; functions keep their own name
        if sizes[node] <= LABEL_MAX_NODES:
            text = to_text(node)
            if len(text) <= LABEL_MAX_CHARS:
                return f"{title} ({text})"
        return title

    return label


# -- ASCII -------------------------------------------------------------------------------------


@dataclass
class _Row:
    text: str
    join: int | None = None  # an operation's row starts "|-->" at this column (its join)
    consumer: int | None = None  # the row that uses this one: this row's `*` is at its join
    suffix: str = ""

    @property
    def end(self) -> int:
        return (0 if self.join is None else self.join + 5) + len(self.text)


def to_ascii(picture: Scene | Node | Sequence[Node]) -> str:
    """The diagram as text: one row per drawn node, joins `*` and bars `|` between them."""
    picture = _as_scene(picture)
    roots = [node for _, node in picture.outputs]
    label = _labeller(topological_order(roots))
    uses: dict[int, int] = {}
    for node in topological_order(roots):
        for a in node.args:
            uses[id(a)] = uses.get(id(a), 0) + 1
    for root in roots:
        uses[id(root)] = uses.get(id(root), 0) + 1
    names: dict[int, str] = {}
    lines: list[str] = []
    budget = ASCII_MAX_CHARS
    for output_label, root in picture.outputs:
        rows: list[_Row] = []
        # Post-order walk. A frame is [node, next argument, its arguments' rows, the rightmost
        # end of every row drawn for it so far]: its join column goes right of all of them.
        stack: list[list] = [[root, 0, [], 0]]
        while stack:
            node, index, argument_rows, block_end = frame = stack[-1]
            if node.args and id(node) not in names and index < len(node.args):
                frame[1] += 1
                stack.append([node.args[index], 0, [], 0])
                continue
            stack.pop()
            if id(node) in names:  # drawn before: refer to it by name
                rows.append(_Row(f"[{names[id(node)]}]"))
            elif not node.args:
                rows.append(_Row(label(node)))
            else:
                text = label(node)
                if uses[id(node)] > 1:
                    names[id(node)] = f"t{len(names)}"
                    text = f"[{names[id(node)]}] {text}"
                if id(node) in picture.derivative:
                    text += " [grad]"
                if len(argument_rows) == 1:  # one operand: continue its row, "x --> exp"
                    rows[-1].text += f" --> {text}"
                else:
                    for r in argument_rows:
                        rows[r].consumer = len(rows)
                    rows.append(_Row(text, join=block_end + 1 + MIN_DASHES))
            block_end = max(block_end, rows[-1].end)
            if stack:
                stack[-1][2].append(len(rows) - 1)
                stack[-1][3] = max(stack[-1][3], block_end)
        rows[-1].suffix = f" --> Output ({output_label})"
        # Deep nesting makes this layout quadratic (each level moves the joins right): bound
        # the size before drawing, and point at DOT, which stays linear.
        budget -= len(rows) * (max((r.join or 0) for r in rows) + 2) + len(rows[-1].suffix)
        if budget < 0:
            raise DiagramTooLarge(
                f"the ASCII diagram would be over {ASCII_MAX_CHARS // 1_000_000} MB: the graph "
                "nests too deeply to draw as text; use --format dot or svg (to_dot, to_svg)")
        lines += ([""] if lines else []) + _layout(rows)
    if names or picture.derivative:
        lines += ["", "Legend:"]
        if names:
            lines.append("  [tN]   a node used more than once: drawn once, later uses say [tN]")
        if picture.derivative:
            lines.append("  [grad] a node of the derivative graph")
    return "\n".join(lines) + "\n"


def _layout(rows: list[_Row]) -> list[str]:
    """Draw the rows: dashes from each row to its consumer's join, bars down each join."""
    grid: list[list[str]] = []
    for row in rows:
        line = row.text if row.join is None else f"{' ' * row.join}|--> {row.text}"
        if row.consumer is not None:
            line += " " + "-" * (rows[row.consumer].join - len(line) - 1) + "*"
        grid.append(list(line + row.suffix))
    # A bar runs down each join column from the first argument's `*` to the consumer's row;
    # every row in between belongs to that consumer's block, so ends left of the column.
    first: dict[int, int] = {}
    for index, row in enumerate(rows):
        if row.consumer is not None:
            first.setdefault(row.consumer, index)
    for consumer, start_row in first.items():
        column = rows[consumer].join
        for r in range(start_row + 1, consumer):
            cells = grid[r]
            if len(cells) <= column:
                cells.extend(" " * (column + 1 - len(cells)))
            if cells[column] == " ":
                cells[column] = "|"
    return ["".join(cells).rstrip() for cells in grid]


# -- DOT, SVG, PNG -----------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(picture: Scene | Node | Sequence[Node]) -> str:
    """Graphviz DOT text: each node once, edges from operands to operations, left to right."""
    picture = _as_scene(picture)
    order = topological_order([node for _, node in picture.outputs])
    label = _labeller(order)
    ident = {id(node): f"n{i}" for i, node in enumerate(order)}
    lines = ["digraph symgraph {", "  rankdir=LR;",
             '  node [fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
    if picture.derivative:
        lines.append('  label="orange boxes: derivative nodes"; labelloc=b; fontsize=10; '
                     'fontname="Helvetica";')
    for node in order:
        if node.op == "symbol":
            style = 'shape=ellipse, style=filled, fillcolor="#dbe9f6"'
        elif node.op == "const":
            style = "shape=plaintext"
        elif id(node) in picture.derivative:
            style = 'shape=box, style="rounded,filled", fillcolor="#fbd5b0", color="#c0504d"'
        else:
            style = 'shape=box, style="rounded,filled", fillcolor="#f2f2f2"'
        lines.append(f"  {ident[id(node)]} [label={_quote(label(node))}, {style}];")
    for node in order:
        ordered = len(node.args) > 1 and not OPS[node.op].commutative
        for position, arg in enumerate(node.args):
            note = f" [label={_quote(str(position + 1))}]" if ordered else ""
            lines.append(f"  {ident[id(arg)]} -> {ident[id(node)]}{note};")
    for k, (name, node) in enumerate(picture.outputs):
        lines.append(f"  out{k} [label={_quote(f'Output ({name})')}, shape=doubleoctagon];")
        lines.append(f"  {ident[id(node)]} -> out{k};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def render(dot_text: str, fmt: str) -> bytes:
    """Run Graphviz's `dot` to make an ``svg`` or ``png``; GraphvizError says how to fix."""
    program = shutil.which("dot")
    if program is None:
        raise GraphvizError(INSTALL_HINT)
    try:
        done = subprocess.run([program, f"-T{fmt}"], input=dot_text.encode(),
                              capture_output=True, timeout=DOT_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise GraphvizError(f"Graphviz's dot took over {DOT_TIMEOUT_SECONDS} s to lay out the "
                            "graph; use --format ascii or dot for graphs this big") from None
    except OSError as error:
        raise GraphvizError(f"could not run Graphviz's dot ({error}). {INSTALL_HINT}") from None
    if done.returncode != 0 or not done.stdout:
        message = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        raise GraphvizError(f"Graphviz's dot failed: {message}")
    return done.stdout


def to_svg(node_or_nodes: Scene | Node | Sequence[Node], *, grad: bool = False,
           names: Sequence[str] | None = None) -> str | None:
    """SVG text for notebooks (``_repr_svg_``), or None when Graphviz is missing or the graph
    is too big to lay out quickly, so Jupyter falls back to the next representation.

    `grad` adds the derivative graph (w.r.t. every free symbol); `names` label the outputs.
    """
    if not graphviz_available():
        return None
    picture = node_or_nodes if isinstance(node_or_nodes, Scene) else scene(
        node_or_nodes, names, grad=grad)
    if len(topological_order([n for _, n in picture.outputs])) > SVG_MAX_NODES:
        return None
    try:
        return render(to_dot(picture), "svg").decode("utf-8")
    except GraphvizError:
        return None
