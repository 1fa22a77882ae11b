"""``--fail-if`` predicates, in the subset of ``rocflow diff``'s expression language
(evalexpr's) that its documentation shows: numbers, metric names, ``true``/``false``,
``+ - * / %``, comparisons (``< <= > >= == !=``), ``&&``, ``||``, ``!`` and parentheses,
with evalexpr's precedence (``||`` lowest, then ``&&``, comparisons, sums, products,
unary ``!`` and ``-``). A predicate must come out true or false.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

#: One token: a number, a name, an operator or a parenthesis; or a character that is none.
TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[<>+\-*/%!()])|(?P<bad>\S))"
)
BINARY = [
    {"||": lambda a, b: a or b},
    {"&&": lambda a, b: a and b},
    {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne},
    {"+": operator.add, "-": operator.sub},
    {"*": operator.mul, "/": operator.truediv, "%": operator.mod},
]
LOGICAL = {"||", "&&", "!"}


@dataclass(frozen=True)
class ExpressionError(Exception):
    """Why a predicate cannot be decided, at a column (1-based) where it is one place."""

    message: str
    column: int | None = None

    def __str__(self) -> str:
        return self.message if self.column is None else f"column {self.column}: {self.message}"


def evaluate(text: str, names: dict[str, float]) -> bool:
    """Whether the predicate `text` holds with the metrics `names`."""
    value = _Parser(text, names).whole()
    if not isinstance(value, bool):
        raise ExpressionError(f"it gives {value}, not true or false", None)
    return value


class _Parser:
    """A recursive descent over the tokens, evaluating as it goes."""

    def __init__(self, text: str, names: dict[str, float]):
        self.names = names
        self.tokens: list[tuple[str, str, int]] = []
        for match in TOKEN.finditer(text):
            kind = match.lastgroup
            if kind is None:
                continue
            column = match.start(kind) + 1
            if kind == "bad":
                raise ExpressionError(f"unexpected `{match.group(kind)}`", column)
            self.tokens.append((kind, match.group(kind), column))
        self.end = len(text.rstrip()) + 1
        self.at = 0

    def whole(self):
        if not self.tokens:
            raise ExpressionError("the expression is empty")
        value = self.binary(0)
        if self.at < len(self.tokens):
            _, text, column = self.tokens[self.at]
            raise ExpressionError(f"unexpected `{text}`", column)
        return value

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def binary(self, level: int):
        if level == len(BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while (token := self.peek()) and token[0] == "op" and token[1] in BINARY[level]:
            self.at += 1
            right = self.binary(level + 1)
            left = self.apply(token, BINARY[level][token[1]], left, right)
        return left

    def apply(self, token, function, left, right):
        _, op, column = token
        logical = op in LOGICAL
        if logical != isinstance(left, bool) or logical != isinstance(right, bool):
            if op not in ("==", "!="):
                wants = "true or false" if logical else "numbers"
                raise ExpressionError(f"`{op}` takes {wants}", column)
        if op in ("/", "%") and right == 0:
            raise ExpressionError("division by zero", column)
        return function(left, right)

    def unary(self):
        token = self.peek()
        if token is None:
            raise ExpressionError("the expression ends where a value is due", self.end)
        kind, text, column = token
        self.at += 1
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "name":
            if text in ("true", "false"):
                return text == "true"
            if text not in self.names:
                known = ", ".join(sorted(self.names))
                raise ExpressionError(f"`{text}` is no metric (names: {known})", column)
            return float(self.names[text])
        if text == "(":
            value = self.binary(0)
            closing = self.peek()
            if closing is None or closing[1] != ")":
                raise ExpressionError("`(` is not closed", column)
            self.at += 1
            return value
        if text in ("!", "-"):
            value = self.unary()
            if (text == "!") != isinstance(value, bool):
                raise ExpressionError(f"`{text}` takes {'true or false' if text == '!' else 'a number'}", column)
            return (not value) if text == "!" else -value
        raise ExpressionError(f"unexpected `{text}`", column)
