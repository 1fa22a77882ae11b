//! `rocflow analyze --fail-if`: a predicate over each finding, in the expression language
//! of `rocflow diff --fail-if` ([`crate::expression`]); the gate holds when a finding
//! satisfies it.

use evalexpr::{ContextWithMutableVariables, HashMapContext, Node, Value};

use super::finding::{Finding, Severity};

/// The names a predicate can use, with what they are.
pub const NAMES: &[(&str, &str)] = &[
    ("rule", "the finding's rule, e.g. \"sync-copy\""),
    (
        "severity",
        "its severity, compared with info < warning < error",
    ),
    ("at_stake_ns", "the time at stake, in nanoseconds"),
    ("info, warning, error", "the severities"),
];

/// A checked `--fail-if` predicate.
#[derive(Debug)]
pub struct Gate {
    tree: Node,
}

/// Why a predicate was refused.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Parse(#[from] crate::expression::ExpressionError),
    #[error("{0} (the names it can use: {names})", names = names())]
    Eval(#[source] evalexpr::EvalexprError),
}

fn names() -> String {
    let names: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
    names.join(", ")
}

impl Gate {
    /// Parses a predicate and tries it on a finding, so that a misspelt name or a value
    /// that is no boolean is refused before any work.
    pub fn new(predicate: &str) -> Result<Gate, GateError> {
        let gate = Gate {
            tree: crate::expression::parse(predicate)?,
        };
        let probe = Finding {
            rule: "probe",
            severity: Severity::Info,
            statement: String::new(),
            evidence: Vec::new(),
            at_stake_ns: 0,
            advice: "",
        };
        gate.holds_for(&probe)?;
        Ok(gate)
    }

    /// Whether a finding satisfies the predicate.
    fn holds_for(&self, finding: &Finding) -> Result<bool, GateError> {
        let mut context = HashMapContext::new();
        let mut set = |name: &str, value: Value| {
            context
                .set_value(name.to_owned(), value)
                .expect("a fresh context takes any value")
        };
        for severity in Severity::ALL {
            set(severity.name(), Value::Int(severity as i64));
        }
        set("rule", Value::String(finding.rule.to_owned()));
        set("severity", Value::Int(finding.severity as i64));
        set(
            "at_stake_ns",
            Value::Int(i64::try_from(finding.at_stake_ns).unwrap_or(i64::MAX)),
        );
        self.tree
            .eval_boolean_with_context(&context)
            .map_err(GateError::Eval)
    }

    /// The first finding that satisfies the predicate, if one does.
    pub fn first_holding<'f>(&self, findings: &'f [Finding]) -> Option<&'f Finding> {
        // The predicate evaluated on a probe already: it cannot fail on a finding.
        findings.iter().find(|f| self.holds_for(f).unwrap_or(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &'static str, severity: Severity, at_stake_ns: u64) -> Finding {
        Finding {
            rule,
            severity,
            statement: String::new(),
            evidence: Vec::new(),
            at_stake_ns,
            advice: "",
        }
    }

    #[test]
    fn a_gate_holds_when_a_finding_satisfies_it() {
        let findings = [
            finding("gpu-idle", Severity::Info, 10),
            finding("sync-copy", Severity::Warning, 5_000_000),
        ];
        let holds = |p: &str| {
            Gate::new(p)
                .unwrap()
                .first_holding(&findings)
                .map(|f| f.rule)
        };
        assert_eq!(holds("severity >= warning"), Some("sync-copy"));
        assert_eq!(holds("severity >= error"), None);
        assert_eq!(holds("rule == \"gpu-idle\""), Some("gpu-idle"));
        assert_eq!(holds("rule == \"launch-bound\""), None);
        assert_eq!(
            holds("at_stake_ns > 1000000 && severity > info"),
            Some("sync-copy")
        );
        assert_eq!(Gate::new("true").unwrap().first_holding(&[]), None);
    }

    #[test]
    fn bad_predicates_are_refused_up_front() {
        let e = Gate::new("severty >= warning").unwrap_err();
        assert!(matches!(e, GateError::Eval(_)), "{e}");
        assert!(e.to_string().contains("the names it can use: rule"), "{e}");
        assert!(matches!(Gate::new("rule"), Err(GateError::Eval(_))));
        assert!(matches!(Gate::new("(severity"), Err(GateError::Parse(_))));
    }
}
