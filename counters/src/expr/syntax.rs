//! The syntax tree an expression parses to, and the walks over it.

use std::ops::Range;

use super::Dimension;

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
