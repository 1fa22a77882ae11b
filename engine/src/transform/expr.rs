//! Pipeline expressions (filters, derived columns) evaluated on records: evalexpr trees
//! compiled once, read variables from the record's columns.

use evalexpr::{Context, EvalexprError, EvalexprResult, Node, Value};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{Cell, row};

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
