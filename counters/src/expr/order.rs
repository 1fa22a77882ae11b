//! The order to compute counters that are defined over each other in.

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
    let mut walk = Walk {
        named,
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

/// A depth-first walk that emits each expression after those it refers to.
struct Walk<'n, 'a> {
    named: &'n [(&'a str, &'n Expr)],
    marks: Vec<Mark>,
    path: Vec<usize>,
    order: Vec<usize>,
}

impl<'a> Walk<'_, 'a> {
    fn visit(&mut self, i: usize) -> Result<(), Vec<&'a str>> {
        match self.marks[i] {
            Mark::Done => return Ok(()),
            Mark::Open => {
                let start = self
                    .path
                    .iter()
                    .position(|&p| p == i)
                    .expect("open is on the path");
                let mut cycle: Vec<&'a str> = self.path[start..]
                    .iter()
                    .map(|&p| self.named[p].0)
                    .collect();
                cycle.push(self.named[i].0);
                return Err(cycle);
            }
            Mark::New => {}
        }
        self.marks[i] = Mark::Open;
        self.path.push(i);
        for reference in self.named[i].1.references() {
            if let Some(j) = self
                .named
                .iter()
                .position(|(n, _)| *n == reference.as_str())
            {
                self.visit(j)?;
            }
        }
        self.path.pop();
        self.marks[i] = Mark::Done;
        self.order.push(i);
        Ok(())
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
}
