//! Pipeline expressions (filters, derived columns) evaluated on records: evalexpr trees
//! compiled once, read variables from the record's columns.
//!
//! `args.NAME` reads an API call's argument: an integer where the SDK printed one (sizes,
//! counts) or an address, else its text. A call without that argument (another function,
//! or a context that collects none) makes the whole expression empty: a filter drops the
//! call, a derived column is empty, and neither counts as a failure, since a filter on
//! `args.sizeBytes` is meant for the calls that have one.

use evalexpr::{Context, EvalexprError, EvalexprResult, Node, Value};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{Cell, row};
use crate::expression::ARGS;
use crate::record::ArgValue;

/// A compiled expression and the columns it reads.
#[derive(Debug)]
pub struct Expression {
    tree: Node,
    variables: Vec<String>,
}

impl Expression {
    pub fn compile(text: &str) -> Result<Expression, String> {
        let tree = crate::expression::parse(text).map_err(|e| e.to_string())?;
        let mut variables: Vec<String> = tree
            .iter_variable_identifiers()
            .map(str::to_owned)
            .collect();
        variables.sort();
        variables.dedup();
        Ok(Expression { tree, variables })
    }

    /// Evaluates on record `i` of `chunk`; `values` is scratch space reused across records.
    pub fn eval(
        &self,
        chunk: &Chunk,
        i: usize,
        meta: &StreamMeta,
        values: &mut Vec<Value>,
    ) -> EvalexprResult<Value> {
        let record = row(&chunk.batch, i);
        values.clear();
        for name in &self.variables {
            if let Some(arg) = name.strip_prefix(ARGS) {
                match argument(chunk, i, arg, meta) {
                    Some(value) => values.push(value),
                    None => return Ok(Value::Empty),
                }
                continue;
            }
            let value = match record.cell(name, meta) {
                Some(Cell::Int(v)) => Value::Int(v),
                Some(Cell::Float(v)) => Value::Float(v),
                Some(Cell::Str(s)) => Value::String(s.to_owned()),
                None => match chunk.extra(name) {
                    Some(extra) => extra.values[i].clone(),
                    None => return Err(EvalexprError::VariableIdentifierNotFound(name.clone())),
                },
            };
            values.push(value);
        }
        self.tree.eval_with_context(&Variables {
            names: &self.variables,
            values,
        })
    }
}

/// The value of record `i`'s argument `name`, if it has one.
fn argument(chunk: &Chunk, i: usize, name: &str, meta: &StreamMeta) -> Option<Value> {
    let args = chunk.call_args(i)?;
    let arg = args.iter().find(|a| meta.string(a.name) == name)?;
    Some(match arg.value {
        ArgValue::Int(v) => Value::Int(v),
        // Addresses above i64::MAX wrap, as in every integer column.
        ArgValue::Address(v) => Value::Int(v as i64),
        ArgValue::Text(sym) => Value::String(meta.string(sym).to_owned()),
    })
}

/// The variables of one record, as evalexpr asks for them.
struct Variables<'a> {
    names: &'a [String],
    values: &'a [Value],
}

impl Context for Variables<'_> {
    fn get_value(&self, identifier: &str) -> Option<&Value> {
        let i = self.names.iter().position(|n| n == identifier)?;
        self.values.get(i)
    }

    fn call_function(&self, identifier: &str, _: &Value) -> EvalexprResult<Value> {
        Err(EvalexprError::FunctionIdentifierNotFound(
            identifier.to_owned(),
        ))
    }

    fn are_builtin_functions_disabled(&self) -> bool {
        false
    }

    fn set_builtin_functions_disabled(&mut self, disabled: bool) -> EvalexprResult<()> {
        if disabled {
            Err(EvalexprError::BuiltinFunctionsCannotBeDisabled)
        } else {
            Ok(())
        }
    }
}
