//! A context's derived counters (`[[context.counters.derived]]`), parsed and ordered so
//! each comes after those it reads, evaluated with rocprofiler-sdk's semantics by the
//! counters crate's evaluator.

use rocflow_counters::expr::{self, EvalError, Expr, Tensor};

/// One derived counter.
#[derive(Debug)]
pub struct Derived {
    pub name: String,
    pub expression: String,
    parsed: Expr,
}

/// A context's derived counters, in the order they are computed in.
#[derive(Debug)]
pub struct DerivedCounters(Vec<Derived>);

/// What evaluating one derived counter gave: `None` when it reads a value the inputs do
/// not have (a counter its agent does not collect), so it is not computed.
pub type Outcome = Option<Result<Tensor, EvalError>>;

impl DerivedCounters {
    /// Parses and orders the counters. The plan was validated, so an error here means it
    /// was edited by hand.
    pub fn new(defined: &[(String, String)]) -> Result<DerivedCounters, String> {
        let parsed = defined
            .iter()
            .map(|(name, text)| {
                expr::parse(text).map_err(|e| format!("derived counter `{name}`: {e}"))
            })
            .collect::<Result<Vec<Expr>, String>>()?;
        let named: Vec<(&str, &Expr)> = defined
            .iter()
            .map(|(n, _)| n.as_str())
            .zip(&parsed)
            .collect();
        let order = expr::evaluation_order(&named)
            .map_err(|cycle| format!("derived counters form a cycle: {}", cycle.join(" -> ")))?;
        let mut parsed: Vec<Option<Expr>> = parsed.into_iter().map(Some).collect();
        Ok(DerivedCounters(
            order
                .into_iter()
                .map(|i| Derived {
                    name: defined[i].0.clone(),
                    expression: defined[i].1.clone(),
                    parsed: parsed[i].take().expect("each counter is ordered once"),
                })
                .collect(),
        ))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Derived> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Evaluates every counter, in order, over `inputs`: the values of the collected
    /// counters and agent properties by name. A counter reads those and the counters
    /// computed before it; one that reads a missing value, or a counter that failed, is not
    /// computed.
    pub fn evaluate(&self, inputs: impl Fn(&str) -> Option<Tensor>) -> Vec<Outcome> {
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(self.0.len());
        for counter in &self.0 {
            let mut missing = false;
            let result = counter.parsed.evaluate(&mut |name| {
                let earlier = self.0[..outcomes.len()].iter().position(|d| d.name == name);
                let value = match earlier {
                    Some(k) => outcomes[k].as_ref().and_then(|o| o.as_ref().ok()).cloned(),
                    None => inputs(name),
                };
                missing |= value.is_none();
                value
            });
            outcomes.push((!missing).then_some(result));
        }
        outcomes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocflow_counters::expr::Dimension::{ShaderEngine, Xcc};

    fn counters(defined: &[(&str, &str)]) -> Result<DerivedCounters, String> {
        let owned: Vec<(String, String)> = defined
            .iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect();
        DerivedCounters::new(&owned)
    }

    /// SQ_WAVES over 2 XCCs x 2 shader engines, VALU twice as many; 4 SIMDs.
    fn inputs(name: &str) -> Option<Tensor> {
        let shape = [(Xcc, 2), (ShaderEngine, 2)];
        match name {
            "SQ_WAVES" => Some(Tensor::from_shape(&shape, &[1.0, 2.0, 0.0, 4.0])),
            "SQ_INSTS_VALU" => Some(Tensor::from_shape(&shape, &[2.0, 4.0, 6.0, 8.0])),
            "simd_count" => Some(Tensor::scalar(4.0)),
            _ => None,
        }
    }

    #[test]
    fn computed_in_dependency_order_with_the_sdk_semantics() {
        let derived = counters(&[
            ("PER_SIMD", "PER_WAVE_TOTAL / simd_count"),
            ("PER_WAVE", "SQ_INSTS_VALU / SQ_WAVES"),
            (
                "PER_WAVE_TOTAL",
                "reduce(SQ_INSTS_VALU,sum) / reduce(SQ_WAVES,sum)",
            ),
        ])
        .unwrap();
        let names: Vec<&str> = derived.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["PER_WAVE_TOTAL", "PER_SIMD", "PER_WAVE"]);
        let values: Vec<Vec<f64>> = derived
            .evaluate(inputs)
            .into_iter()
            .map(|o| o.unwrap().unwrap().values())
            .collect();
        // Per instance, and 6/0 is 0 as in the SDK.
        assert_eq!(
            values,
            [
                vec![20.0 / 7.0],
                vec![20.0 / 7.0 / 4.0],
                vec![2.0, 2.0, 0.0, 2.0]
            ]
        );
    }

    #[test]
    fn missing_inputs_skip_and_failures_stop_dependents() {
        let derived = counters(&[
            ("NEEDS_SALU", "SQ_INSTS_SALU / SQ_WAVES"),
            (
                "MISMATCH",
                "SQ_WAVES / select(SQ_WAVES,[DIMENSION_XCC=[0]])",
            ),
            ("AFTER", "MISMATCH * 2"),
        ])
        .unwrap();
        let outcomes = derived.evaluate(inputs);
        assert!(outcomes[0].is_none(), "SQ_INSTS_SALU is not collected");
        let error = outcomes[1].as_ref().unwrap().as_ref().unwrap_err();
        assert_eq!(
            error.message,
            "`/` of 4 and 2 instances: the counts must be equal or one of them 1"
        );
        assert!(outcomes[2].is_none());
    }

    #[test]
    fn cycles_and_bad_expressions_are_refused() {
        assert_eq!(
            counters(&[("A", "B"), ("B", "A+1")]).unwrap_err(),
            "derived counters form a cycle: A -> B -> A"
        );
        assert!(
            counters(&[("A", "SQ_WAVES +")])
                .unwrap_err()
                .starts_with("derived counter `A`: column")
        );
    }
}
