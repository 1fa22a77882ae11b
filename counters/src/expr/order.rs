//! The order to compute counters that are defined over each other in.

use std::collections::HashMap;

use super::Expr;

/// Orders named expressions so that each comes after the ones it refers to (names outside
/// `named` are inputs and impose no order); otherwise the given order is kept. A cycle is
/// an error that names its members, the first repeated at the end.
///
/// ```
/// use rocflow_counters::expr::{evaluation_order, parse};
///
/// let (a, b) = (parse("B*2").unwrap(), parse("SQ_WAVES+1").unwrap());
/// assert_eq!(evaluation_order(&[("A", &a), ("B", &b)]), Ok(vec![1, 0]));
/// let c = parse("A-1").unwrap();
/// assert_eq!(
///     evaluation_order(&[("A", &a), ("B", &c)]),
///     Err(vec!["A", "B", "A"])
/// );
/// ```
pub fn evaluation_order<'a>(named: &[(&'a str, &Expr)]) -> Result<Vec<usize>, Vec<&'a str>> {
    let mut index = HashMap::with_capacity(named.len());
    for (i, (name, _)) in named.iter().enumerate() {
        index.entry(*name).or_insert(i);
    }
    let mut walk = Walk {
        named,
        index,
        marks: vec![Mark::New; named.len()],
        path: Vec::new(),
        order: Vec::with_capacity(named.len()),
    };
    for i in 0..named.len() {
        walk.visit(i)?;
    }
    Ok(walk.order)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    New,
    /// On the path being walked: meeting it again closes a cycle.
    Open,
    Done,
}

/// A depth-first walk that emits each expression after those it refers to. It loops over a
/// stack of its own rather than recursing: a pipeline, or a plan read back from a spool,
/// may define a chain of counters far deeper than a thread's stack.
struct Walk<'n, 'a> {
    named: &'n [(&'a str, &'n Expr)],
    /// Each name's index in `named` (the first, if repeated).
    index: HashMap<&'a str, usize>,
    marks: Vec<Mark>,
    /// The expressions being walked, outermost first, each with the indices of those it
    /// refers to that are still to visit.
    path: Vec<(usize, std::vec::IntoIter<usize>)>,
    order: Vec<usize>,
}

impl<'a> Walk<'_, 'a> {
    /// Emits `root` after all it refers to, unless it was emitted already.
    fn visit(&mut self, root: usize) -> Result<(), Vec<&'a str>> {
        self.enter(root)?;
        while let Some((_, references)) = self.path.last_mut() {
            match references.next() {
                Some(j) => self.enter(j)?,
                None => {
                    let (i, _) = self.path.pop().expect("not empty");
                    self.marks[i] = Mark::Done;
                    self.order.push(i);
                }
            }
        }
        Ok(())
    }

    /// Meets expression `i`: a cycle if it is on the path, nothing if it was emitted, else
    /// it goes on the path.
    fn enter(&mut self, i: usize) -> Result<(), Vec<&'a str>> {
        match self.marks[i] {
            Mark::Done => Ok(()),
            Mark::Open => {
                let start = (self.path.iter())
                    .position(|&(p, _)| p == i)
                    .expect("open is on the path");
                let mut cycle: Vec<&'a str> = self.path[start..]
                    .iter()
                    .map(|&(p, _)| self.named[p].0)
                    .collect();
                cycle.push(self.named[i].0);
                Err(cycle)
            }
            Mark::New => {
                self.marks[i] = Mark::Open;
                let references: Vec<usize> = (self.named[i].1.references())
                    .filter_map(|r| self.index.get(r.as_str()).copied())
                    .collect();
                self.path.push((i, references.into_iter()));
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse;

    fn order(defs: &[(&'static str, &str)]) -> Result<Vec<usize>, Vec<&'static str>> {
        let parsed: Vec<Expr> = defs.iter().map(|(_, e)| parse(e).unwrap()).collect();
        let named: Vec<(&str, &Expr)> = defs.iter().map(|(n, _)| *n).zip(&parsed).collect();
        evaluation_order(&named)
    }

    #[test]
    fn inputs_first_and_the_given_order_otherwise() {
        assert_eq!(order(&[("A", "X"), ("B", "Y")]), Ok(vec![0, 1]));
        assert_eq!(
            order(&[("A", "B+C"), ("B", "C*2"), ("C", "X")]),
            Ok(vec![2, 1, 0])
        );
    }

    #[test]
    fn cycles_name_their_members() {
        assert_eq!(order(&[("A", "A+1")]), Err(vec!["A", "A"]));
        assert_eq!(
            order(&[("X", "1"), ("A", "B"), ("B", "C"), ("C", "A")]),
            Err(vec!["A", "B", "C", "A"])
        );
    }

    /// A chain of 100,000 counters, each the one before plus one, orders in one pass and
    /// does not overflow the stack (it recursed once a link, and looked each name up
    /// through all the others).
    #[test]
    fn a_long_chain_orders_without_recursing() {
        const LENGTH: usize = 100_000;
        let names: Vec<String> = (0..LENGTH).map(|i| format!("D{i}")).collect();
        let parsed: Vec<Expr> = (0..LENGTH)
            .map(|i| parse(&format!("D{}+1", i + 1)).unwrap())
            .collect();
        let named: Vec<(&str, &Expr)> = names.iter().map(String::as_str).zip(&parsed).collect();
        let expected: Vec<usize> = (0..LENGTH).rev().collect();
        assert_eq!(evaluation_order(&named), Ok(expected));
    }
}
