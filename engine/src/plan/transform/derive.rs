//! `derive` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `derive` module.


use evalexpr::Value;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::diag::Step;

use super::kind::{Check, Compiled, Declared, strict_per_record};

/// Declared and compiled alike.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Options {
    pub column: String,
    pub expression: String,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "required": ["column", "expression"],
            "properties": {
                "column": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" },
                "expression": { "type": "string" },
                "strict": strict_per_record()
            }
        })
    }

    fn compile(&self, check: &mut impl Check) -> Option<Options> {
        let results = check.expression("expression", &self.expression);
        let kinds = check.kinds().to_vec();
        if let Some(kind) = kinds.iter().find(|&&k| check.has_column(k, &self.column)) {
            let message = format!(
                "`{}` is already a column of {} records",
                self.column,
                kind.name()
            );
            check.error(&[Step::Key("column")], message).hint =
                Some("choose a new column name".into());
        }
        // Later expressions see the column, with this one's value on a sample record.
        let samples = results.into_iter().chain(std::iter::repeat(Value::Empty));
        for (kind, sample) in kinds.into_iter().zip(samples) {
            check.add_column(kind, &self.column, sample);
        }
        Some(self.clone())
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        format!("{} = {}", self.column, self.expression)
    }
}
