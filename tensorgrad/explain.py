"""``tensorgrad explain "a*b*a" a=2 b=3``: watch backpropagation happen on a small expression.

The expression is parsed with :mod:`ast` (never ``eval``) into a graph of scalar ``Value``s.
The report lists the nodes in topological order with their forward values, then each step of
the reverse sweep: for every input of the node being processed, the local derivative, the
contribution (local x the node's gradient) and the input's gradient after adding it. Where a
value is used along several paths the contributions add up, and the report says so.

With ``forward=NAME`` (``tensorgrad explain ... --forward x1``) the report also shows forward
mode, the lecture's forward table: one tangent per node, ``ṫ = Σ local · (operand's
tangent)``, seeded with ``ẋ1 = 1`` and every other input's tangent 0, computed in the same
order as the values (``tensorgrad.scalar.forward_tangents``). Its last line is the derivative
with respect to that one input, which the backward sweep gives for all inputs at once.
"""

from __future__ import annotations

import argparse
import ast
import keyword
import operator
import sys
import unicodedata

from tensorgrad.scalar import Value, forward_tangents, topological_order

FUNCTIONS = ("exp", "log", "tanh", "sigmoid", "relu", "sin", "cos", "sqrt", "abs")
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_ALLOWED = (
    "allowed: numbers, the variables given, + - * / **, unary minus, parentheses and the "
    f"functions {', '.join(FUNCTIONS)}"
)
_CONSTRUCTS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Lambda: "lambda",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.IfExp: "conditional expression",
    ast.NamedExpr: "assignment expression",
    ast.JoinedStr: "f-string",
    ast.Starred: "starred expression",
    ast.List: "list",
    ast.Tuple: "tuple",
    ast.Set: "set",
    ast.Dict: "dict",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}

# An op's result is described by its op and operands (Values or constants), left to right.
Form = tuple[str, tuple["Value | float", ...]]


def explain(expression: str, /, **values: float) -> str:
    """A step-by-step report of the forward and backward pass of ``expression``.

    ``values`` gives every variable of the expression its value. Raises ``ValueError`` naming
    the offending construct for anything outside the small language (see ``FUNCTIONS``), and
    the engine's own errors (e.g. ``log`` of a non-positive number) while evaluating.
    """
    return _explain(expression, values, None)


def explain_forward(expression: str, wrt: str, /, **values: float) -> str:
    """:func:`explain`'s report with forward mode's table too: the tangent of every node
    with respect to the input ``wrt`` (the lecture's ``v̇i``, line by line), before the
    backward sweep, and the two modes' answers side by side at the end."""
    if wrt not in values:
        known = ", ".join(values) or "none"
        raise ValueError(f"--forward {wrt}: {wrt} is not one of the variables given ({known})")
    return _explain(expression, values, wrt)


def _explain(expression: str, values: dict[str, float], wrt: str | None) -> str:
    for name in values:
        if name in FUNCTIONS:
            raise ValueError(f"variable name {name!r} is taken by the function {name}()")
    builder = _Builder({name: Value(v, label=name) for name, v in values.items()})
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        root = builder.build(tree.body)
    except SyntaxError as exc:
        raise ValueError(f"could not parse expression {expression!r}: {exc.msg}") from None
    except RecursionError:
        raise ValueError("the expression is nested too deeply to explain") from None
    if not isinstance(root, Value):
        raise ValueError(f"{expression!r} has no variables: there is nothing to differentiate")
    return _report(expression, values, builder, root, wrt)


class _Builder:
    """Turns an expression's syntax tree into Values, remembering how each node was made."""

    def __init__(self, variables: dict[str, Value]) -> None:
        self.variables = variables
        self.forms: dict[Value, Form] = {}

    def build(self, node: ast.AST) -> Value | float:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise _unsupported(node, f"constant {node.value!r}")
            return float(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.build(node.operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            return self._apply("neg", operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow) and isinstance(right, Value):
                raise ValueError(
                    f"the exponent of ** must be a constant, got `{ast.unparse(node.right)}` "
                    f"in `{ast.unparse(node)}`"
                )
            return self._apply(_OPERATORS[type(node.op)], left, right)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            raise _unsupported(node, f"operator `{_operator_symbol(node.op)}`")
        raise _unsupported(node, _CONSTRUCTS.get(type(node), type(node).__name__))

    def _name(self, name: str) -> Value:
        if name in self.variables:
            return self.variables[name]
        if name in FUNCTIONS:
            raise ValueError(f"`{name}` is a function: call it as {name}(x)")
        raise ValueError(f"unknown name `{name}`: give it a value, e.g. {name}=1.5")

    def _call(self, node: ast.Call) -> Value | float:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise _unsupported(node, f"call of `{ast.unparse(node.func)}`")
        name = node.func.id
        if node.keywords:
            keyword_text = ast.unparse(node.keywords[0])
            raise _unsupported(node, f"keyword argument `{keyword_text}` in call to {name}()")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise _unsupported(node, "starred argument")
        if len(node.args) != 1:
            raise ValueError(f"{name}() takes exactly one argument, got {len(node.args)}")
        return self._apply(name, self.build(node.args[0]))

    def _apply(self, op: str, *operands: Value | float) -> Value | float:
        """Run the op on the engine; fold it to a number when every operand is a constant."""
        if not any(isinstance(x, Value) for x in operands):
            return _run(op, *(Value(x) for x in operands)).data
        out = _run(op, *operands)
        self.forms[out] = (op, operands)
        return out


_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _run(op: str, *operands: Value | float) -> Value:
    """Apply ``op`` with the engine's own operators and methods."""
    if op == "neg":
        return -operands[0]
    if op == "abs":
        return abs(operands[0])
    if op in FUNCTIONS:
        return getattr(operands[0], op)()
    if op == "**":
        return operands[0] ** operands[1]
    return _BINARY[op](*operands)


def _unsupported(node: ast.AST, what: str) -> ValueError:
    return ValueError(f"unsupported {what} `{ast.unparse(node)}` in the expression; {_ALLOWED}")


def _operator_symbol(op: ast.AST) -> str:
    symbols = {
        ast.FloorDiv: "//",
        ast.Mod: "%",
        ast.MatMult: "@",
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitAnd: "&",
        ast.BitXor: "^",
        ast.Not: "not",
        ast.Invert: "~",
    }
    return symbols.get(type(op), type(op).__name__)


# -- the report ------------------------------------------------------------------------------


def _num(x: float) -> str:
    """Numbers as a learner would write them: 2, 0.5, 11.6521, 1e-07."""
    return f"{x:.6g}"


def _term(x: float) -> str:
    """A number as the right operand of + or *: negative numbers in parentheses."""
    return f"({_num(x)})" if x < 0 else _num(x)


def dotted(name: str) -> str:
    """The tangent's name: a dot over the first letter, as the lecture writes it (ẋ1, ṫ3)."""
    return unicodedata.normalize("NFC", name[0] + "\u0307") + name[1:]


def _report(
    expression: str, values: dict[str, float], builder: _Builder, root: Value, wrt: str | None
) -> str:
    order = topological_order(root)
    names = {v: name for name, v in builder.variables.items()}
    for node in order:
        if node not in names:
            names[node] = f"t{len(names) - len(builder.variables) + 1}"

    def show(x: Value | float) -> str:
        return names[x] if isinstance(x, Value) else _num(x)

    def definition(node: Value) -> str:
        if node not in builder.forms:
            return names[node]
        op, operands = builder.forms[node]
        return f"{names[node]} = {_form_text(op, [show(x) for x in operands])}"

    given = ", ".join(f"{name} = {_num(float(v))}" for name, v in values.items())
    lines = [f"explain {expression.strip()}   at {given}", ""]
    lines.append("Forward pass, in topological order (each node after the nodes it uses):")
    width = max(len(definition(node)) for node in order)
    for node in order:
        role = "input" if node not in builder.forms else ""
        role = "output" if node is root else role
        lines.append(f"  {definition(node):<{width}}  = {_num(node.data):<10} {role}".rstrip())

    out = names[root]
    tangents = None
    if wrt is not None:
        tangents = forward_tangents(root, {builder.variables[wrt]: 1.0})
        lines += ["", *_forward_table(order, builder, names, tangents, wrt, root)]
    lines += ["", f"Backward pass, in reverse order, starting from {out}.grad = 1:"]
    grad: dict[Value, float] = {root: 1.0}  # this sweep's gradients, as backward() keeps them
    for node in reversed(order):
        if node not in builder.forms:
            continue
        lines.append(f"  {definition(node)}:  {names[node]}.grad = {_num(grad[node])}")
        op, operands = builder.forms[node]
        positions = [i for i, x in enumerate(operands) if isinstance(x, Value)]
        for i, child, local in zip(positions, node._children, node._local_grads, strict=True):
            contribution = local * grad[node]
            before = grad.get(child)
            grad[child] = (before or 0.0) + contribution
            formula = _local_formula(op, [show(x) for x in operands], i)
            local_text = _num(local) if formula == _num(local) else f"{formula} = {_num(local)}"
            product = f"{_num(local)} * {_term(grad[node])}"
            line = (
                f"    {names[child]}: local d{names[node]}/d{names[child]} = {local_text};"
                f"  contribution {product} = {_num(contribution)};  {names[child]}.grad = "
            )
            if before is None:
                line += _num(grad[child])
            else:
                line += f"{_num(before)} + {_term(contribution)} = {_num(grad[child])}"
                line += f"   <- {names[child]} is reached along more than one path: they add up"
            lines.append(line)

    if root not in builder.forms:
        lines.append(f"  (nothing to do: {out} is an input)")
    root.backward()
    lines += ["", f"Gradients of {out} = {_num(root.data)}:"]
    for name, variable in builder.variables.items():
        note = "" if variable in grad else f"   ({name} does not appear in the expression)"
        lines.append(f"  d{out}/d{name} = {_num(variable.grad)}{note}")
    if tangents is not None:
        lines += [
            "",
            f"Forward mode, one sweep per input: d{out}/d{wrt} = {_num(tangents[root])} "
            "(the backward sweep gave every input's gradient at once, above)",
        ]
    return "\n".join(lines) + "\n"


def _forward_table(
    order: list[Value],
    builder: _Builder,
    names: dict[Value, str],
    tangents: dict[Value, float],
    wrt: str,
    root: Value,
) -> list[str]:
    """The forward-mode lines: each node's tangent as a formula of its operands' tangents,
    the same formula with the numbers in, and its value."""
    others = [n for n in builder.variables if n != wrt]
    seed = f"{dotted(wrt)} = 1" + "".join(f", {dotted(n)} = 0" for n in others)
    lines = [f"Forward mode with respect to {wrt}, seeding {seed}, in the same order:"]
    rows = []
    for node in order:
        name = names[node]
        if node not in builder.forms:
            rows.append((f"{dotted(name)}", "", "input"))
            continue
        op, operands = builder.forms[node]
        texts = [names[x] if isinstance(x, Value) else _num(x) for x in operands]
        dots = [dotted(names[x]) if isinstance(x, Value) else None for x in operands]
        locals_named = [
            _local_formula(op, texts, i) if isinstance(x, Value) else ""
            for i, x in enumerate(operands)
        ]
        symbolic = _tangent_formula(op, texts, dots, locals_named)
        values = [_term(x.data) if isinstance(x, Value) else _num(x) for x in operands]
        dot_values = [_term(tangents[x]) if isinstance(x, Value) else None for x in operands]
        locals_numbers = [
            _term(local) for local in node._local_grads
        ]  # one per Value operand, in order
        it = iter(locals_numbers)
        locals_numeric = [next(it) if isinstance(x, Value) else "" for x in operands]
        numeric = _tangent_formula(op, values, dot_values, locals_numeric)
        rows.append((f"{dotted(name)} = {symbolic}", numeric, "output" if node is root else ""))
    width = max(_width(r[0]) for r in rows)
    for node, (left, numeric, role) in zip(order, rows, strict=True):
        value = _num(tangents[node])
        middle = f" = {numeric}" if numeric and numeric != value else ""
        padding = " " * (width - _width(left))
        lines.append(f"  {left}{padding}{middle} = {value}   {role}".rstrip())
    lines.append(f"  d{names[root]}/d{wrt} = {dotted(names[root])} = {_num(tangents[root])}")
    return lines


def _width(text: str) -> int:
    """Columns on screen: a combining dot takes none."""
    return sum(not unicodedata.combining(c) for c in text)


def _tangent_formula(op: str, args: list[str], dots: list[str | None], local: list[str]) -> str:
    """The tangent of ``op``'s result from its operands (``args``), their tangents (``dots``,
    None for a constant) and local derivatives, written as a learner would: ȧ + ḃ,
    ȧ * b + a * ḃ, ȧ / a for log, cos(a) * ȧ."""
    live = [i for i, d in enumerate(dots) if d is not None]
    if op == "+":
        return " + ".join(dots[i] for i in live)
    if op == "-":
        if len(live) == 2:
            return f"{dots[0]} - {dots[1]}"
        return dots[0] if live == [0] else f"-{dots[1]}"
    if op == "neg":
        return f"-{dots[0]}"
    if op == "*":
        if len(live) == 2:
            return f"{dots[0]} * {args[1]} + {args[0]} * {dots[1]}"
        i = live[0]
        return f"{args[1 - i]} * {dots[i]}"
    if op == "/":
        if len(live) == 2:
            return f"{dots[0]} / {args[1]} - {args[0]} * {dots[1]} / {args[1]}**2"
        if live == [0]:
            return f"{dots[0]} / {args[1]}"
        return f"-{args[0]} * {dots[1]} / {args[1]}**2"
    if op == "log":
        return f"{dots[0]} / {args[0]}"
    factor = local[0]
    if " " in factor:
        factor = f"({factor})"
    return f"{factor} * {dots[0]}"


def _form_text(op: str, args: list[str]) -> str:
    if op == "neg":
        return f"-{args[0]}"
    if op in FUNCTIONS:
        return f"{op}({args[0]})"
    return f"{args[0]} {op} {args[1]}"


def _local_formula(op: str, args: list[str], i: int) -> str:
    """The local derivative of ``op`` with respect to operand ``i``, as a formula."""
    x = args[0]
    if op in ("+", "-"):
        return "-1" if (op == "-" and i == 1) else "1"
    if op == "*":
        return args[1 - i]
    if op == "/":
        numerator = x[1:] if x.startswith("-") else f"-{x}"
        return f"1 / {args[1]}" if i == 0 else f"{numerator} / {args[1]}**2"
    if op == "**":
        p = float(args[1])
        power = x if p == 2 else f"{x}**{_num(p - 1)}"
        return "1" if p == 1 else f"{args[1]} * {power}"
    unary = {
        "neg": "-1",
        "exp": f"exp({x})",
        "log": f"1 / {x}",
        "tanh": f"1 - tanh({x})**2",
        "sigmoid": f"sigmoid({x}) * (1 - sigmoid({x}))",
        "relu": f"(1 if {x} > 0 else 0)",
        "sin": f"cos({x})",
        "cos": f"-sin({x})",
        "sqrt": f"1 / (2 * sqrt({x}))",
        "abs": f"sign({x})",
    }
    return unary[op]


# -- the command line ------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``explain`` command to the ``tensorgrad`` command line."""
    parser = subparsers.add_parser(
        "explain",
        help="show the forward values and the backward sweep of a scalar expression",
        description=(
            "Build the graph of a scalar expression, then show its forward values in "
            "topological order and every step of the backward pass. " + _ALLOWED + "."
        ),
        epilog='example: tensorgrad explain "a*b*a" a=2 b=3   '
        "(put -- before an expression that starts with a minus sign)",
    )
    parser.add_argument("expression", help='the expression, e.g. "a*b*a" or "tanh(w*x + b)"')
    parser.add_argument("values", nargs="*", metavar="NAME=VALUE", help="e.g. a=2 b=-3.5")
    parser.add_argument(
        "--forward",
        metavar="NAME",
        default=None,
        help="also show forward mode: every node's tangent with respect to the input NAME, "
        "line by line (the lecture's forward table)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``explain`` command: print the report, or a one-line error and return 2."""
    try:
        values = parse_values(args.values)
        wrt = getattr(args, "forward", None)
        if wrt is None:
            report = explain(args.expression, **values)
        else:
            report = explain_forward(args.expression, wrt, **values)
    except (ValueError, ArithmeticError) as exc:
        print(f"tensorgrad explain: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(report)
    return 0


def parse_values(items: list[str]) -> dict[str, float]:
    """``["a=2", "b=-3"]`` -> ``{"a": 2.0, "b": -3.0}``; ValueError for anything else."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"malformed value {item!r}: expected NAME=NUMBER, e.g. a=2")
        if name in values:
            raise ValueError(f"{name} is given more than one value")
        try:
            values[name] = float(text)
        except ValueError:
            raise ValueError(f"malformed value {item!r}: {text!r} is not a number") from None
    return values
