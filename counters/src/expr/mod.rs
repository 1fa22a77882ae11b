//! rocprofiler-sdk's derived-counter expression language: parser and evaluator.
//!
//! ```text
//! 100*reduce(GRBM_CP_BUSY,max)/reduce(GRBM_GUI_ACTIVE,max)
//! reduce(TCC_HIT,sum,[DIMENSION_INSTANCE])
//! select(SQ_WAVES,[DIMENSION_XCC=[0],DIMENSION_SHADER_ENGINE=[1,2]])
//! accumulate(SQ_LEVEL_WAVES,HIGH_RES)
//! ```
//!
//! Integers, `+ - * /` (usual precedence, left to right), parentheses, names (counters and
//! agent properties such as `simd_count`), `reduce(e, sum|avr|min|max[, [DIMENSION_…]])`,
//! `select(e, [DIMENSION_…=[i,…], …])` and `accumulate(COUNTER, NONE|LOW_RES|HIGH_RES)`.
//! The grammar follows the SDK's (`counters/parser/`); where the SDK would accept something
//! and then fail or silently misread it (a range in `select`, an unknown reduce operation,
//! `1.5` read as `1`), the parser rejects it and says why.
//!
//! ```
//! use rocflow_counters::expr::{self, Dimension, Tensor};
//!
//! let e = expr::parse("reduce(TCC_HIT,sum)/CU_NUM").unwrap();
//! assert_eq!(e.references().map(|n| n.as_str()).collect::<Vec<_>>(), ["TCC_HIT", "CU_NUM"]);
//!
//! let hits = Tensor::from_shape(&[(Dimension::Instance, 4)], &[1.0, 2.0, 3.0, 4.0]);
//! let value = e.evaluate(&mut |name| match name {
//!     "TCC_HIT" => Some(hits.clone()),
//!     "CU_NUM" => Some(Tensor::scalar(5.0)),
//!     _ => None,
//! });
//! assert_eq!(value.unwrap().values(), [2.0]);
//! ```

mod display;
mod eval;
mod lexer;
mod order;
mod parser;
mod tensor;

use std::fmt;
use std::ops::Range;

pub use eval::EvalError;
pub use order::evaluation_order;
pub use tensor::{Coordinates, Dimension, Instance, Tensor};

/// Parses an expression; errors carry the byte offset they point at.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    parser::parse(src)
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Number(i64),
    /// A counter, or an agent property such as `simd_count`.
    Reference(Name),
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Combines instances with `op` over `dimensions` (all of them when empty).
    Reduce {
        operand: Box<Expr>,
        op: ReduceOp,
        dimensions: Vec<Dimension>,
    },
    /// Keeps the instances at the given indices of each dimension.
    Select {
        operand: Box<Expr>,
        selections: Vec<(Dimension, Vec<u32>)>,
    },
    /// A hardware counter read with the SQ block's accumulation of per-cycle levels.
    Accumulate {
        counter: Name,
        resolution: Resolution,
    },
}

/// A name in an expression, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    /// Byte range in the expression.
    pub span: Range<usize>,
}

impl Name {
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    /// Division by zero gives zero, as in the SDK.
    Divide,
}

/// How `reduce` combines instances; the names are the SDK's (`avr`, not `avg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Average,
    Min,
    Max,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 4] = [
        ReduceOp::Sum,
        ReduceOp::Average,
        ReduceOp::Min,
        ReduceOp::Max,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Average => "avr",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }
}

/// The `accumulate` modes rocprofiler-sdk knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    None,
    LowRes,
    HighRes,
}

impl Resolution {
    pub const ALL: [Resolution; 3] = [Resolution::None, Resolution::LowRes, Resolution::HighRes];

    pub fn name(self) -> &'static str {
        match self {
            Resolution::None => "NONE",
            Resolution::LowRes => "LOW_RES",
            Resolution::HighRes => "HIGH_RES",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl Expr {
    /// Every name the expression refers to, in order of appearance (repeats included).
    pub fn references(&self) -> impl Iterator<Item = &Name> {
        let mut names = Vec::new();
        self.walk(&mut |e| match e {
            Expr::Reference(name) | Expr::Accumulate { counter: name, .. } => names.push(name),
            _ => {}
        });
        names.into_iter()
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

    /// Calls `f` on this node and every node below it, parents first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Binary { lhs, rhs, .. } => {
                lhs.walk(f);
                rhs.walk(f);
            }
            Expr::Reduce { operand, .. } | Expr::Select { operand, .. } => operand.walk(f),
            Expr::Number(_) | Expr::Reference(_) | Expr::Accumulate { .. } => {}
        }
    }
}

/// Why an expression does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    span: Range<usize>,
    message: String,
    hint: Option<String>,
}

impl ParseError {
    pub(crate) fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        ParseError {
            span,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// Byte offset in the expression where the problem is.
    pub fn offset(&self) -> usize {
        self.span.start
    }

    /// Byte range in the expression of the offending text.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl fmt::Display for ParseError {
    /// `column N: message`, the column counted from 1.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.span.start + 1, self.message)
    }
}

impl std::error::Error for ParseError {}
