//! Evaluation with rocprofiler-sdk's semantics (`counters/evaluate_ast.cpp`), including
//! its quirks, because results must equal the SDK's on the same instance data.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use super::{BinaryOp, Coordinates, Dimension, Expr, Instance, ReduceOp, Tensor};

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub message: String,
    /// Byte range in the expression of the name or operation at fault.
    pub span: Option<Range<usize>>,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

impl Expr {
    /// Evaluates the expression; `values` gives the tensor of each name (hardware counters
    /// and agent properties; a derived counter's value if the caller has one), or `None`
    /// when it has none.
    pub fn evaluate(
        &self,
        values: &mut impl FnMut(&str) -> Option<Tensor>,
    ) -> Result<Tensor, EvalError> {
        match self {
            Expr::Number(n) => Ok(Tensor::scalar(*n as f64)),
            // `accumulate` changes how the hardware counts, not how the value is read.
            Expr::Reference(name) | Expr::Accumulate { counter: name, .. } => values(&name.text)
                .ok_or_else(|| EvalError {
                    message: format!("no value for `{}`", name.text),
                    span: Some(name.span.clone()),
                }),
            Expr::Binary { op, lhs, rhs } => {
                binary(*op, lhs.evaluate(values)?, rhs.evaluate(values)?)
            }
            Expr::Reduce {
                operand,
                op,
                dimensions,
            } => Ok(reduce(operand.evaluate(values)?, *op, dimensions)),
            Expr::Select {
                operand,
                selections,
            } => Ok(select(operand.evaluate(values)?, selections)),
        }
    }

    /// The divisions whose divisor is a constant zero, such as `X/0` or `X/(2-2)`: the SDK
    /// makes each of them 0 on every dispatch, which is never what was meant.
    ///
    /// ```
    /// let e = rocflow_counters::expr::parse("A/(2-2) + B/2").unwrap();
    /// let found: Vec<String> = e.zero_divisions().iter().map(|d| d.to_string()).collect();
    /// assert_eq!(found, ["A/(2-2)"]);
    /// ```
    pub fn zero_divisions(&self) -> Vec<&Expr> {
        let mut found = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Binary {
                op: BinaryOp::Divide,
                rhs,
                ..
            } = e
                && rhs.references().next().is_none()
                && rhs
                    .evaluate(&mut |_| None)
                    .is_ok_and(|divisor| divisor.values().iter().all(|&v| v == 0.0))
            {
                found.push(e);
            }
        });
        found
    }
}

/// Applies `op` instance by instance. As in the SDK, the operand with more instances is
/// always taken as the left one: a single value is broadcast to every instance of the
/// other side, but `1 - X` on a multi-instance `X` computes `X - 1` (and `8 / X`, `X / 8`).
/// Equal counts pair instances by position; other counts are an error.
fn binary(op: BinaryOp, lhs: Tensor, rhs: Tensor) -> Result<Tensor, EvalError> {
    let (mut wide, narrow) = if lhs.len() < rhs.len() {
        (rhs, lhs)
    } else {
        (lhs, rhs)
    };
    let apply = |a: f64, b: f64| match op {
        BinaryOp::Add => a + b,
        BinaryOp::Subtract => a - b,
        BinaryOp::Multiply => a * b,
        BinaryOp::Divide if b == 0.0 => 0.0,
        BinaryOp::Divide => a / b,
    };
    let mismatch = |message: String| EvalError {
        message,
        span: None,
    };
    match narrow.instances() {
        [] => {
            return Err(mismatch(format!(
                "an operand of `{}` has no instances",
                op.symbol()
            )));
        }
        [single] => {
            for instance in wide.instances_mut() {
                instance.value = apply(instance.value, single.value);
            }
        }
        many if many.len() == wide.len() => {
            for (instance, other) in wide.instances_mut().iter_mut().zip(many) {
                instance.value = apply(instance.value, other.value);
            }
        }
        many => {
            return Err(mismatch(format!(
                "`{}` of {} and {} instances: the counts must be equal or one of them 1",
                op.symbol(),
                wide.len(),
                many.len()
            )));
        }
    }
    Ok(wide)
}

/// Combines instances that differ only along `dimensions` (all instances when none or
/// all are listed). The result keeps the other coordinates, with the reduced ones at 0;
/// a single result instance has all coordinates at 0. Groups come out in order of first
/// appearance (the SDK leaves their order unspecified).
fn reduce(tensor: Tensor, op: ReduceOp, dimensions: &[Dimension]) -> Tensor {
    if tensor.is_empty() {
        return tensor;
    }
    let everything = dimensions.is_empty() || dimensions.len() == Dimension::COUNT;
    let mut groups: Vec<(Coordinates, Vec<f64>)> = Vec::new();
    let mut group_of: HashMap<Coordinates, usize> = HashMap::new();
    for instance in tensor.instances() {
        let mut key = instance.coordinates;
        match everything {
            true => key = Coordinates::default(),
            false => dimensions.iter().for_each(|&d| key.set(d, 0)),
        }
        let group = *group_of.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[group].1.push(instance.value);
    }
    let single = groups.len() == 1;
    let instances = groups
        .into_iter()
        .map(|(coordinates, values)| Instance {
            coordinates: if single {
                Coordinates::default()
            } else {
                coordinates
            },
            value: combine(op, &values),
        })
        .collect();
    Tensor::new(instances)
}

/// `min` and `max` keep the first extreme value, as `std::min_element` does.
fn combine(op: ReduceOp, values: &[f64]) -> f64 {
    let first = values[0];
    match op {
        ReduceOp::Sum => values.iter().sum(),
        ReduceOp::Average => values.iter().sum::<f64>() / values.len() as f64,
        ReduceOp::Min => values.iter().fold(first, |m, &v| if v < m { v } else { m }),
        ReduceOp::Max => values.iter().fold(first, |m, &v| if m < v { v } else { m }),
    }
}

/// Keeps the instances whose index along each listed dimension is one of those given,
/// and moves them to index 0 of that dimension, as the SDK does: selecting several
/// indices leaves instances that share coordinates, which a later `reduce` combines.
fn select(mut tensor: Tensor, selections: &[(Dimension, Vec<u32>)]) -> Tensor {
    for (dimension, indices) in selections {
        tensor.instances_mut().retain_mut(|instance| {
            let keep = indices.contains(&instance.coordinates.get(*dimension));
            instance.coordinates.set(*dimension, 0);
            keep
        });
    }
    tensor
}
