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
mod error;
mod eval;
mod lexer;
mod order;
mod parser;
mod syntax;
mod tensor;

pub use error::ParseError;
pub use eval::EvalError;
pub use order::evaluation_order;
pub use syntax::{BinaryOp, Expr, Name, ReduceOp, Resolution};
pub use tensor::{Coordinates, Dimension, Instance, Tensor};

/// Parses an expression; errors carry the byte offset they point at.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    parser::parse(src)
}
