"""--fail-if predicates: rocflow diff's operators with evalexpr's precedence, and one
error with its column for what cannot be decided."""

import pytest

from rocflow.expression import ExpressionError, evaluate

NAMES = {"kernel_time_ratio": 1.25, "kernels_added": 2.0, "worst_kernel_ratio": 3.0}


@pytest.mark.parametrize(
    "predicate, holds",
    [
        ("kernel_time_ratio > 1.10", True),
        ("kernel_time_ratio > 1.25", False),
        ("kernel_time_ratio >= 1.25", True),
        ("kernels_added == 2", True),
        ("kernels_added != 2 || worst_kernel_ratio > 2", True),
        ("kernels_added > 0 && worst_kernel_ratio < 2", False),
        # && binds tighter than ||.
        ("true || false && false", True),
        ("!(kernel_time_ratio > 1) || false", False),
        ("kernel_time_ratio * 4 - 1 == 4", True),
        ("1 + 2 * 3 == 7 && (1 + 2) * 3 == 9 && 7 % 4 == 3 && -kernels_added < 0", True),
        ("2e0 / 4 == 0.5", True),
    ],
)
def test_predicates_hold_as_rocflow_diffs_do(predicate: str, holds: bool):
    assert evaluate(predicate, NAMES) is holds


@pytest.mark.parametrize(
    "predicate, says",
    [
        ("kernel_time > 1", "column 1: `kernel_time` is no metric (names: kernel_time_ratio, kernels_added, worst_kernel_ratio)"),
        ("kernel_time_ratio >", "column 20: the expression ends where a value is due"),
        ("(kernels_added > 1", "column 1: `(` is not closed"),
        ("kernels_added > 1 )", "column 19: unexpected `)`"),
        ("kernels_added $ 1", "column 15: unexpected `$`"),
        ("kernels_added + 1", "it gives 3.0, not true or false"),
        ("kernels_added && true", "column 15: `&&` takes true or false"),
        ("true < 1", "column 6: `<` takes numbers"),
        ("kernels_added / 0 > 1", "column 15: division by zero"),
        ("", "the expression is empty"),
    ],
)
def test_what_cannot_be_decided_is_one_error_with_its_column(predicate: str, says: str):
    with pytest.raises(ExpressionError) as error:
        evaluate(predicate, NAMES)
    assert str(error.value) == says
