"""Tests of ``explain``: the report's key numbers, the safe parser's refusals, and the CLI."""

from __future__ import annotations

import argparse
import ast
import math
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from tensorgrad import explain as explain_module
from tensorgrad.cli import main
from tensorgrad.explain import explain, explain_forward, parse_values

ROOT = Path(__file__).resolve().parents[1]

A_B_A = """\
explain a*b*a   at a = 2, b = 3

Forward pass, in topological order (each node after the nodes it uses):
  a            = 2          input
  b            = 3          input
  t1 = a * b   = 6
  t2 = t1 * a  = 12         output

Backward pass, in reverse order, starting from t2.grad = 1:
  t2 = t1 * a:  t2.grad = 1
    t1: local dt2/dt1 = a = 2;  contribution 2 * 1 = 2;  t1.grad = 2
    a: local dt2/da = t1 = 6;  contribution 6 * 1 = 6;  a.grad = 6
  t1 = a * b:  t1.grad = 2
    a: local dt1/da = b = 3;  contribution 3 * 2 = 6;  a.grad = 6 + 6 = 12   \
<- a is reached along more than one path: they add up
    b: local dt1/db = a = 2;  contribution 2 * 2 = 4;  b.grad = 4

Gradients of t2 = 12:
  dt2/da = 12
  dt2/db = 4
"""


def test_a_times_b_times_a_shows_two_paths_adding_up():
    report = explain("a*b*a", a=2, b=3)
    assert report == A_B_A
    assert "contribution 6 * 1 = 6;  a.grad = 6\n" in report  # the path through t2 directly
    assert "contribution 3 * 2 = 6;  a.grad = 6 + 6 = 12" in report  # the path through t1
    assert "dt2/da = 12" in report and "dt2/db = 4" in report


def test_the_docs_show_the_real_report():
    assert A_B_A in (ROOT / "docs" / "scalar.md").read_text()


def final_gradients(report: str) -> dict[str, float]:
    section = report.split("\nGradients of ")[1]
    return {m[1]: float(m[2]) for m in re.finditer(r"d\w+/d(\w+) = (\S+)", section)}


def last_accumulated(report: str, name: str) -> float:
    return float(re.findall(rf"  {name}\.grad = (?:.* = )?(\S+)", report)[-1])


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        ("log(x1) + x1*x2 - sin(x2)", {"x1": 2, "x2": 5}, {"x1": 5.5, "x2": 1.71634}),
        ("a*b + (a + b)*a*b", {"a": -2, "b": 3}, {"a": 3 - 3, "b": -2 - 8}),
        ("a*a", {"a": 3}, {"a": 6}),
        ("2*3*a - a/4 + a**3", {"a": 2}, {"a": 6 - 0.25 + 12}),
        ("sqrt(a)/relu(b) + sigmoid(a)*tanh(b)**3 - cos(a)", {"a": 2, "b": 1}, None),
        ("exp(-a) + abs(b) - -a", {"a": 0.5, "b": -2}, None),
    ],
)
def test_trace_matches_the_engine(expression, values, expected):
    report = explain(expression, **values)
    grads = final_gradients(report)
    if expected is not None:
        assert grads == pytest.approx(expected, abs=1e-5)
    for name in values:  # the sweep shown adds up to what backward() computes
        assert last_accumulated(report, name) == pytest.approx(grads[name], rel=1e-5)


def test_log_example_numbers():
    report = explain("log(x1) + x1*x2 - sin(x2)", x1=2, x2=5)
    assert "t5 = t3 - t4  = 11.6521    output" in report
    assert "x1: local dt1/dx1 = 1 / x1 = 0.5;  contribution 0.5 * 1 = 0.5;  x1.grad = 5 + 0.5" in (
        report
    )
    assert "x2: local dt4/dx2 = cos(x2) = 0.283662;  contribution 0.283662 * (-1)" in report


def test_constants_fold_and_unused_variables_are_reported():
    report = explain("2*3*a + b", a=1, b=2, c=3)
    assert "t1 = 6 * a" in report
    assert "dt2/dc = 0   (c does not appear in the expression)" in report


def test_an_expression_that_is_just_a_variable():
    report = explain("+a", a=2)
    assert "(nothing to do: a is an input)" in report and "da/da = 1" in report


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("a.real", "unsupported attribute access `a.real`"),
        ("a[0]", "unsupported subscript `a\\[0\\]`"),
        ("(lambda: a)()", "unsupported call of `lambda: a`"),
        ("lambda: a", "unsupported lambda"),
        ("a < 2", "unsupported comparison `a < 2`"),
        ("a and a", "unsupported boolean operator"),
        ("a if a else a", "unsupported conditional expression"),
        ("'x' * a", "unsupported constant 'x'"),
        ("True * a", "unsupported constant True"),
        ("1j * a", "unsupported constant 1j"),
        ("[a]", "unsupported list"),
        ("(a, a)", "unsupported tuple"),
        ("(a := 2)", "unsupported assignment expression"),
        ("f'{a}'", "unsupported f-string"),
        ("print(a)", "unsupported call of `print`"),
        ("__import__('os').system('ls')", "unsupported call of `__import__\\('os'\\).system`"),
        ("exp(x=a)", "unsupported keyword argument `x=a` in call to exp\\(\\)"),
        ("exp(*a)", "unsupported starred argument"),
        ("exp(a, a)", "exp\\(\\) takes exactly one argument, got 2"),
        ("a // 2", "unsupported operator `//`"),
        ("a % 2", "unsupported operator `%`"),
        ("~a", "unsupported operator `~`"),
        ("not a", "unsupported operator `not`"),
        ("a * c", "unknown name `c`: give it a value, e.g. c=1.5"),
        ("exp + a", "`exp` is a function: call it as exp\\(x\\)"),
        ("a ** a", "the exponent of \\*\\* must be a constant, got `a`"),
        ("a +", "could not parse expression 'a \\+'"),
        ("a = 2", "could not parse expression"),
        ("2 + 3", "has no variables"),
        ("(" * 300 + "a" + ")" * 300, "could not parse|nested too deeply"),
        ("a" + "+a" * 20000, "could not parse|nested too deeply"),
    ],
)
def test_anything_else_is_refused_with_a_clear_message(expression, message):
    with pytest.raises(ValueError, match=message) as err:
        explain(expression, a=2)
    if "unsupported" in message:
        assert "allowed: numbers, the variables given" in str(err.value)


def test_engine_errors_surface():
    with pytest.raises(ValueError, match=r"log\(-1\.0\): the argument must be positive"):
        explain("log(-a)", a=1)
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        explain("1 / (a - a)", a=1)
    with pytest.raises(ValueError, match="variable name 'exp' is taken by the function"):
        explain("exp * 2", exp=1)


def test_the_parser_never_evaluates_code():
    tree = ast.parse(Path(explain_module.__file__).read_text())
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}


# -- the command line ------------------------------------------------------------------------


def run_explain(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tensorgrad")
    explain_module.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_prints_the_report(capsys):
    assert run_explain(["explain", "a*b*a", "a=2", "b=3"]) == 0
    assert capsys.readouterr().out == A_B_A


def test_cli_through_the_dispatcher(capsys):
    assert main(["explain", "a*b*a", "a=2", "b=3"]) == 0
    assert capsys.readouterr().out == A_B_A


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["a*b", "a=2"], "unknown name `b`: give it a value, e.g. b=1.5"),
        (["a", "a2"], "malformed value 'a2': expected NAME=NUMBER"),
        (["a", "a=x"], "malformed value 'a=x': 'x' is not a number"),
        (["a", "2a=1"], "malformed value '2a=1'"),
        (["a", "a=1", "a=2"], "a is given more than one value"),
        (["a.b", "a=1"], "unsupported attribute access `a.b`"),
        (["log(a)", "a=-1"], "log\\(-1.0\\): the argument must be positive"),
        (["1/(a-a)", "a=1"], "division by zero"),
        (["exp(a)", "a=1000"], "exp\\(1000.0\\) overflows"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(capsys, argv, message):
    assert run_explain(["explain", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(f"tensorgrad explain: error: .*{message}.*\n", captured.err)
    assert "Traceback" not in captured.err


def test_cli_negative_values_and_a_leading_minus():
    assert parse_values(["a=-2", "b = 3e-1"]) == {"a": -2.0, "b": 0.3}
    assert run_explain(["explain", "--", "-a*b", "a=-2", "b=3"]) == 0


def test_python_dash_m_tensorgrad_explain():
    done = subprocess.run(
        [sys.executable, "-m", "tensorgrad", "explain", "a*b*a", "a=2", "b=3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == A_B_A
    bad = subprocess.run(
        [sys.executable, "-m", "tensorgrad", "explain", "a*b", "a=2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "unknown name `b`" in bad.stderr


# -- forward mode (--forward NAME) -------------------------------------------------------------

LECTURE_FORWARD_TABLE = """\
Forward mode with respect to x1, seeding ẋ1 = 1, ẋ2 = 0, in the same order:
  ẋ1                     = 1   input
  ṫ1 = ẋ1 / x1           = 1 / 2 = 0.5
  ẋ2                     = 0   input
  ṫ2 = ẋ1 * x2 + x1 * ẋ2 = 1 * 5 + 2 * 0 = 5
  ṫ3 = ṫ1 + ṫ2           = 0.5 + 5 = 5.5
  ṫ4 = cos(x2) * ẋ2      = 0.283662 * 0 = 0
  ṫ5 = ṫ3 - ṫ4           = 5.5 - 0 = 5.5   output
  dt5/dx1 = ṫ5 = 5.5
"""


def tangents_in(report: str) -> dict[str, float]:
    """Each node's tangent from the forward table: the number after the last '='."""
    table = report.split("Forward mode with respect to")[1].split("\n\n")[0]
    found = {}
    for line in table.splitlines()[1:]:
        match = re.match(r"\s+(\S+)\s.*= (\S+)(?:\s+(?:input|output))?$", line)
        if match and not line.strip().startswith("d"):
            found[unicodedata.normalize("NFD", match[1]).replace("\u0307", "")] = float(match[2])
    return found


def test_the_lecture_forward_table():
    report = explain_forward("log(x1) + x1*x2 - sin(x2)", "x1", x1=2, x2=5)
    assert LECTURE_FORWARD_TABLE in report
    assert tangents_in(report) == pytest.approx(
        {"x1": 1, "t1": 0.5, "x2": 0, "t2": 5, "t3": 5.5, "t4": 0, "t5": 5.5}
    )
    # the backward trace is still there, and both modes agree
    assert explain("log(x1) + x1*x2 - sin(x2)", x1=2, x2=5).split("\nBackward pass")[1] in report
    assert "Forward mode, one sweep per input: dt5/dx1 = 5.5 (the backward" in report
    # along x2: ṫ4 = cos(x2) · 1, and dy/dx2 = x1 − cos(x2)
    along_x2 = tangents_in(explain_forward("log(x1) + x1*x2 - sin(x2)", "x2", x1=2, x2=5))
    assert along_x2["t1"] == 0 and along_x2["t2"] == 2
    assert along_x2["t5"] == pytest.approx(2 - math.cos(5), abs=1e-5)


def test_the_docs_show_the_real_forward_table():
    assert LECTURE_FORWARD_TABLE in (ROOT / "docs" / "forward-mode.md").read_text()


@pytest.mark.parametrize(
    ("expression", "values"),
    [
        ("2/a - a/b + exp(-a)*b**3 + 3-b + tanh(a)/4", {"a": 0.5, "b": 2}),
        ("sqrt(a)/relu(b) + sigmoid(a)*tanh(b)**3 - cos(a) + abs(-a*b)", {"a": 2, "b": 1}),
        ("a*b*a - 1/a", {"a": 3, "b": -2}),
    ],
)
def test_every_tangent_line_is_the_engines(expression, values):
    from tensorgrad.scalar import Dual

    for wrt in values:
        report = explain_forward(expression, wrt, **values)
        final = float(re.search(rf"dt\d+/d{wrt} = \S+ = (\S+)", report)[1])
        assert final == pytest.approx(final_gradients(report)[wrt], rel=1e-5)
        # each line's numbers: the formula with the numbers in evaluates to the tangent
        table = report.split("Forward mode with respect to")[1].split("\n\n")[0]
        for line in table.splitlines()[1:]:
            parts = [p.strip() for p in line.split(" = ")]
            if len(parts) == 4:  # name = formula = numbers = value
                numbers = parts[2].replace("**", "^").replace("^", "**")
                assert eval(numbers, {}) == pytest.approx(float(parts[3].split()[0]), rel=1e-5)
        duals = {k: Dual(v, 1.0 if k == wrt else 0.0) for k, v in values.items()}
        namespace = {
            "exp": lambda d: d.exp(),
            "log": lambda d: d.log(),
            "tanh": lambda d: d.tanh(),
            "sigmoid": lambda d: d.sigmoid(),
            "relu": lambda d: d.relu(),
            "sin": lambda d: d.sin(),
            "cos": lambda d: d.cos(),
            "sqrt": lambda d: d.sqrt(),
            "abs": abs,
        }
        dual = eval(expression, namespace, duals)
        assert dual.tangent == pytest.approx(final, rel=1e-5)


def test_forward_of_an_unknown_variable_is_refused(capsys):
    with pytest.raises(ValueError, match="--forward z: z is not one of the variables"):
        explain_forward("a*b", "z", a=1, b=2)
    assert run_explain(["explain", "a*b", "a=1", "b=2", "--forward", "z"]) == 2
    assert "not one of the variables given (a, b)" in capsys.readouterr().err


def test_cli_forward(capsys):
    argv = ["explain", "log(x1) + x1*x2 - sin(x2)", "x1=2", "x2=5", "--forward", "x1"]
    assert run_explain(argv) == 0
    out = capsys.readouterr().out
    assert LECTURE_FORWARD_TABLE in out and "Backward pass" in out
