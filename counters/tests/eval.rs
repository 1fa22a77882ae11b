//! The evaluator on hand-computed tensors: every function, every reduce operation,
//! multi-dimension reduces, select, accumulate, and the SDK's broadcasting.

use rocflow_counters::expr::{self, Dimension, Tensor};

use Dimension::{Instance, ShaderEngine as Se, Xcc};

/// `X[xcc][se][instance]`, two of each:
///
/// ```text
/// xcc 0: se 0: 1 2   se 1: 3 4
/// xcc 1: se 0: 5 6   se 1: 7 8
/// ```
fn x() -> Tensor {
    Tensor::from_shape(
        &[(Xcc, 2), (Se, 2), (Instance, 2)],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
    )
}

fn eval(src: &str) -> Tensor {
    try_eval(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn try_eval(src: &str) -> Result<Tensor, expr::EvalError> {
    let expr = expr::parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    expr.evaluate(&mut |name| match name {
        "X" => Some(x()),
        "PAIR" => Some(Tensor::from_shape(&[(Instance, 2)], &[10.0, 20.0])),
        "TRIPLE" => Some(Tensor::from_shape(&[(Instance, 3)], &[1.0, 2.0, 3.0])),
        "CU_NUM" => Some(Tensor::scalar(4.0)),
        _ => None,
    })
}

fn values(src: &str) -> Vec<f64> {
    eval(src).values()
}

/// Each expression evaluates to its values.
fn assert_values(cases: &[(&str, &[f64])]) {
    for (src, want) in cases {
        assert_eq!(values(src), *want, "{src}");
    }
}

#[test]
fn numbers_and_arithmetic() {
    assert_values(&[
        ("2+3*4", &[14.0]),
        ("(2+3)*4", &[20.0]),
        ("8/4/2", &[1.0]),
        ("10-4-3", &[3.0]),
        ("7/2", &[3.5]),
        ("CU_NUM*100", &[400.0]),
    ]);
}

#[test]
fn division_by_zero_gives_zero() {
    assert_values(&[("1/0", &[0.0]), ("PAIR/(CU_NUM-4)", &[0.0, 0.0])]);
}

#[test]
fn reduce_over_everything_with_each_operation() {
    // Listing every dimension is the same as listing none.
    let all = "reduce(X,sum,[DIMENSION_XCC,DIMENSION_AID,DIMENSION_SHADER_ENGINE,DIMENSION_AGENT,DIMENSION_SHADER_ARRAY,DIMENSION_WGP,DIMENSION_INSTANCE])";
    assert_values(&[
        ("reduce(X,sum)", &[36.0]),
        ("reduce(X,avr)", &[4.5]),
        ("reduce(X,min)", &[1.0]),
        ("reduce(X,max)", &[8.0]),
        (all, &[36.0]),
    ]);
}

#[test]
fn reduce_over_one_dimension_keeps_the_others() {
    let t = eval("reduce(X,sum,[DIMENSION_INSTANCE])");
    assert_eq!(t.values(), [3.0, 7.0, 11.0, 15.0]);
    assert_eq!(t.value_at(&[(Xcc, 1), (Se, 0)]), Some(11.0));
    assert_eq!(t.value_at(&[(Xcc, 0), (Se, 1)]), Some(7.0));

    let t = eval("reduce(X,avr,[DIMENSION_XCC])");
    assert_eq!(t.values(), [3.0, 4.0, 5.0, 6.0]);
    assert_eq!(t.value_at(&[(Se, 1), (Instance, 0)]), Some(5.0));
}

#[test]
fn reduce_over_several_dimensions() {
    let t = eval("reduce(X,max,[DIMENSION_XCC,DIMENSION_SHADER_ENGINE])");
    assert_eq!(t.values(), [7.0, 8.0]);
    assert_eq!(t.value_at(&[(Instance, 1)]), Some(8.0));

    let t = eval("reduce(X,min,[DIMENSION_SHADER_ENGINE,DIMENSION_INSTANCE])");
    assert_eq!(t.values(), [1.0, 5.0]);
    assert_eq!(t.value_at(&[(Xcc, 1)]), Some(5.0));
}

#[test]
fn reduce_over_a_dimension_the_counter_lacks_changes_nothing() {
    assert_eq!(eval("reduce(X,sum,[DIMENSION_WGP])"), x());
}

#[test]
fn a_single_result_instance_is_at_the_origin() {
    // Reducing XCC and SE of a counter that only varies in them leaves one instance; the
    // SDK puts it at index 0 of every dimension.
    let t = eval(
        "reduce(select(X,[DIMENSION_INSTANCE=[1]]),sum,[DIMENSION_XCC,DIMENSION_SHADER_ENGINE])",
    );
    assert_eq!(t.values(), [2.0 + 4.0 + 6.0 + 8.0]);
    assert_eq!(t.value_at(&[]), Some(20.0));
}

#[test]
fn select_keeps_the_listed_indices() {
    let t = eval("select(X,[DIMENSION_XCC=[1]])");
    assert_eq!(t.values(), [5.0, 6.0, 7.0, 8.0]);
    // The selected dimension is collapsed to index 0.
    assert_eq!(t.value_at(&[(Se, 1), (Instance, 0)]), Some(7.0));

    let t = eval("select(X,[DIMENSION_XCC=[1],DIMENSION_INSTANCE=[0]])");
    assert_eq!(t.values(), [5.0, 7.0]);
    assert_eq!(t.value_at(&[(Se, 1)]), Some(7.0));

    assert_eq!(
        values("select(X,[DIMENSION_SHADER_ENGINE=[0,1]])"),
        x().values()
    );
}

#[test]
fn selecting_several_indices_merges_them_as_the_sdk_does() {
    // Both XCCs move to index 0, so reducing over the instances then combines them.
    let t = eval("reduce(select(X,[DIMENSION_XCC=[0,1]]),sum,[DIMENSION_INSTANCE])");
    assert_eq!(t.values(), [1.0 + 2.0 + 5.0 + 6.0, 3.0 + 4.0 + 7.0 + 8.0]);
}

#[test]
fn select_of_absent_indices_is_empty_and_cannot_be_combined() {
    assert!(eval("select(X,[DIMENSION_XCC=[5]])").is_empty());
    assert!(eval("reduce(select(X,[DIMENSION_XCC=[5]]),sum)").is_empty());
    let err = try_eval("select(X,[DIMENSION_XCC=[5]])+1").unwrap_err();
    assert_eq!(err.message, "an operand of `+` has no instances");
}

#[test]
fn accumulate_reads_the_counter() {
    assert_eq!(eval("accumulate(X,HIGH_RES)"), x());
    assert_eq!(values("reduce(accumulate(X,NONE),sum)"), [36.0]);
}

#[test]
fn a_single_value_broadcasts_to_every_instance() {
    assert_eq!(values("X*2"), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
    assert_eq!(
        values("reduce(X,sum,[DIMENSION_INSTANCE])/reduce(X,max)"),
        [3.0 / 8.0, 7.0 / 8.0, 11.0 / 8.0, 15.0 / 8.0]
    );
}

#[test]
fn the_wider_operand_is_always_on_the_left_as_in_the_sdk() {
    // rocprofiler-sdk swaps the operands so the one with more instances comes first:
    // `100/PAIR` is computed as `PAIR/100`, and `1-PAIR` as `PAIR-1`.
    assert_eq!(values("100/PAIR"), [0.1, 0.2]);
    assert_eq!(values("1-PAIR"), [9.0, 19.0]);
    // With one instance on each side nothing is swapped.
    assert_eq!(values("100/reduce(PAIR,sum)"), [100.0 / 30.0]);
}

#[test]
fn equal_instance_counts_pair_by_position() {
    assert_eq!(values("X+X"), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
    assert_eq!(
        values("PAIR-select(X,[DIMENSION_XCC=[1],DIMENSION_SHADER_ENGINE=[0]])"),
        [5.0, 14.0]
    );
}

#[test]
fn other_instance_counts_do_not_combine() {
    let err = try_eval("PAIR*TRIPLE").unwrap_err();
    assert_eq!(
        err.message,
        "`*` of 3 and 2 instances: the counts must be equal or one of them 1"
    );
}

#[test]
fn a_name_without_a_value_is_reported_where_it_is_written() {
    let err = try_eval("X+MISSING").unwrap_err();
    assert_eq!(err.message, "no value for `MISSING`");
    assert_eq!(err.span, Some(2..9));
}
