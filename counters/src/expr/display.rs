//! Expressions written back as text, and drawn as trees for `rocflow counters show`.

use std::fmt::{self, Write};

use super::{BinaryOp, Dimension, Expr};

impl BinaryOp {
    pub fn symbol(self) -> char {
        match self {
            BinaryOp::Add => '+',
            BinaryOp::Subtract => '-',
            BinaryOp::Multiply => '*',
            BinaryOp::Divide => '/',
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Add | BinaryOp::Subtract => 1,
            BinaryOp::Multiply | BinaryOp::Divide => 2,
        }
    }
}

impl Expr {
    fn precedence(&self) -> u8 {
        match self {
            Expr::Binary { op, .. } => op.precedence(),
            _ => u8::MAX,
        }
    }

    /// The expression as an indented tree, one node per line.
    ///
    /// ```
    /// let e = rocflow_counters::expr::parse("100*reduce(A,max)").unwrap();
    /// assert_eq!(e.tree(), "*\n├── 100\n└── reduce(max)\n    └── A\n");
    /// ```
    pub fn tree(&self) -> String {
        let mut out = String::new();
        self.draw(&mut out, "", "");
        out
    }

    fn draw(&self, out: &mut String, first: &str, rest: &str) {
        let _ = writeln!(out, "{first}{}", self.label());
        let children: Vec<&Expr> = match self {
            Expr::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            Expr::Reduce { operand, .. } | Expr::Select { operand, .. } => vec![operand],
            Expr::Number(_) | Expr::Reference(_) | Expr::Accumulate { .. } => vec![],
        };
        for (i, child) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let (branch, indent) = if last {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            child.draw(out, &format!("{rest}{branch}"), &format!("{rest}{indent}"));
        }
    }

    /// The node itself, without its operands.
    fn label(&self) -> String {
        match self {
            Expr::Number(n) => n.to_string(),
            Expr::Reference(name) => name.text.clone(),
            Expr::Binary { op, .. } => op.symbol().to_string(),
            Expr::Reduce { op, dimensions, .. } => match dimensions.is_empty() {
                true => format!("reduce({})", op.name()),
                false => format!("reduce({},[{}])", op.name(), dimension_list(dimensions)),
            },
            Expr::Select { selections, .. } => format!("select([{}])", selection_list(selections)),
            Expr::Accumulate {
                counter,
                resolution,
            } => format!("accumulate({},{})", counter.text, resolution.name()),
        }
    }
}

fn dimension_list(dimensions: &[Dimension]) -> String {
    dimensions
        .iter()
        .map(|d| d.name())
        .collect::<Vec<_>>()
        .join(",")
}

fn selection_list(selections: &[(Dimension, Vec<u32>)]) -> String {
    selections
        .iter()
        .map(|(d, indices)| {
            let indices: Vec<String> = indices.iter().map(u32::to_string).collect();
            format!("{}=[{}]", d.name(), indices.join(","))
        })
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Expr {
    /// The expression in the SDK's syntax, without spaces and with only the parentheses
    /// the tree needs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Binary { op, lhs, rhs } => {
                let wrap = |e: &Expr, needs: bool| match needs {
                    true => format!("({e})"),
                    false => e.to_string(),
                };
                let left = wrap(lhs, lhs.precedence() < op.precedence());
                let right = wrap(rhs, rhs.precedence() <= op.precedence());
                write!(f, "{left}{}{right}", op.symbol())
            }
            Expr::Reduce {
                operand,
                op,
                dimensions,
            } => match dimensions.is_empty() {
                true => write!(f, "reduce({operand},{})", op.name()),
                false => write!(
                    f,
                    "reduce({operand},{},[{}])",
                    op.name(),
                    dimension_list(dimensions)
                ),
            },
            Expr::Select {
                operand,
                selections,
            } => write!(f, "select({operand},[{}])", selection_list(selections)),
            _ => f.write_str(&self.label()),
        }
    }
}
