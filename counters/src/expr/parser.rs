//! Recursive descent over the SDK's grammar (`parser.y`): `+ -` bind looser than `* /`,
//! both left-associative; there is no unary minus.

use std::ops::Range;

use super::lexer::{Spanned, Token, tokenize};
use super::{BinaryOp, Dimension, Expr, Name, ParseError, ReduceOp, Resolution};
use crate::diagnostic::did_you_mean;

/// The SDK stores each dimension index in 6 bits of an instance id.
const MAX_INDEX: u32 = 63;

/// The most numbers, names, operators and functions an expression may have: ten times the
/// SDK's largest. The evaluator, `Display` and `Drop` recurse over the tree (a sum of `n`
/// terms is `n` deep, and a level takes a kilobyte or two of stack in a debug build), so
/// its size must stay far below what a thread's stack holds.
const MAX_NODES: usize = 256;

/// How deep parentheses and functions may nest (the parser recurses at each level).
const MAX_NESTING: usize = 32;

pub(super) fn parse(src: &str) -> Result<Expr, ParseError> {
    let mut parser = Parser {
        src,
        tokens: tokenize(src)?,
        at: 0,
        nodes: 0,
        nesting: 0,
    };
    let expr = parser.sum()?;
    let next = parser.peek();
    if next.token != Token::End {
        return Err(parser.unexpected(next, "an operator or the end of the expression"));
    }
    Ok(expr)
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Spanned>,
    at: usize,
    /// Nodes of the tree so far.
    nodes: usize,
    /// Parentheses and functions open at this point.
    nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Spanned {
        self.tokens[self.at].clone()
    }

    fn bump(&mut self) -> Spanned {
        let token = self.peek();
        if token.token != Token::End {
            self.at += 1;
        }
        token
    }

    fn text(&self, span: &Range<usize>) -> &str {
        &self.src[span.clone()]
    }

    fn unexpected(&self, found: Spanned, expected: &str) -> ParseError {
        let found_text = found.token.describe(self.text(&found.span));
        ParseError::new(
            found.span,
            format!("expected {expected}, found {found_text}"),
        )
    }

    fn expect(&mut self, token: Token, shown: &str) -> Result<Spanned, ParseError> {
        let next = self.bump();
        match next.token == token {
            true => Ok(next),
            false => Err(self.unexpected(next, &format!("`{shown}`"))),
        }
    }

    /// Counts a node of the tree, at the token that makes it.
    fn node(&mut self, at: &Spanned) -> Result<(), ParseError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(ParseError::new(
                at.span.clone(),
                format!("the expression is too long: it has more than {MAX_NODES} numbers, names, operators and functions"),
            )
            .with_hint(Some(SPLIT.into())));
        }
        Ok(())
    }

    /// A sum inside the parentheses or the function `open` starts.
    fn nested_sum(&mut self, open: &Spanned) -> Result<Expr, ParseError> {
        if self.nesting == MAX_NESTING {
            return Err(ParseError::new(
                open.span.clone(),
                format!("parentheses and functions nest more than {MAX_NESTING} deep here"),
            )
            .with_hint(Some(SPLIT.into())));
        }
        self.nesting += 1;
        let sum = self.sum();
        self.nesting -= 1;
        sum
    }

    fn name(&mut self, what: &str) -> Result<Name, ParseError> {
        let next = self.bump();
        match next.token {
            Token::Name => Ok(Name {
                text: self.text(&next.span).to_owned(),
                span: next.span,
            }),
            _ => Err(self.unexpected(next, what)),
        }
    }

    /// `product (("+" | "-") product)*`
    fn sum(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.product()?;
        loop {
            let op = match self.peek().token {
                Token::Plus => BinaryOp::Add,
                Token::Minus => BinaryOp::Subtract,
                _ => return Ok(lhs),
            };
            let operator = self.bump();
            self.node(&operator)?;
            let rhs = self.product()?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
    }

    /// `atom (("*" | "/") atom)*`
    fn product(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.atom()?;
        loop {
            let op = match self.peek().token {
                Token::Star => BinaryOp::Multiply,
                Token::Slash => BinaryOp::Divide,
                _ => return Ok(lhs),
            };
            let operator = self.bump();
            self.node(&operator)?;
            let rhs = self.atom()?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let next = self.bump();
        if matches!(
            next.token,
            Token::Number | Token::Name | Token::Reduce | Token::Select | Token::Accumulate
        ) {
            self.node(&next)?;
        }
        match next.token {
            Token::Number => self.number(&next.span).map(Expr::Number),
            Token::Name => Ok(Expr::Reference(Name {
                text: self.text(&next.span).to_owned(),
                span: next.span,
            })),
            Token::LParen => {
                let inner = self.nested_sum(&next)?;
                self.expect(Token::RParen, ")")?;
                Ok(inner)
            }
            Token::Reduce => self.reduce(),
            Token::Select => self.select(),
            Token::Accumulate => self.accumulate(),
            Token::Minus => Err(self
                .unexpected(next, "a number, a name or `(`")
                .with_hint(Some("expressions have no unary minus: write `0-x`".into()))),
            _ => Err(self.unexpected(next, "a number, a name or `(`")),
        }
    }

    /// The SDK reads numbers with `atoi`, so `1.5` would silently be `1`: only integers are
    /// accepted.
    fn number(&self, span: &Range<usize>) -> Result<i64, ParseError> {
        let text = self.text(span);
        if text.contains(['.', 'e', 'E']) {
            return Err(ParseError::new(
                span.clone(),
                format!(
                    "`{text}` is not an integer; rocprofiler-sdk would read only its integer part"
                ),
            )
            .with_hint(Some(
                "scale by an integer instead, e.g. `x*3/2` for `x*1.5`".into(),
            )));
        }
        text.parse()
            .map_err(|_| ParseError::new(span.clone(), format!("`{text}` is too large")))
    }

    /// `reduce(expr, op)` or `reduce(expr, op, [DIMENSION_…, …])`
    fn reduce(&mut self) -> Result<Expr, ParseError> {
        let open = self.expect(Token::LParen, "(")?;
        let operand = Box::new(self.nested_sum(&open)?);
        self.expect(Token::Comma, ",")?;
        let op_name = self.name("a reduce operation (sum, avr, min or max)")?;
        let op = ReduceOp::from_name(&op_name.text).ok_or_else(|| {
            let known = ReduceOp::ALL.map(ReduceOp::name);
            ParseError::new(
                op_name.span.clone(),
                format!(
                    "unknown reduce operation `{}`; rocprofiler-sdk knows sum, avr, min and max",
                    op_name.text
                ),
            )
            .with_hint(did_you_mean(&op_name.text, known))
        })?;
        let mut dimensions = Vec::new();
        if self.peek().token == Token::Comma {
            self.bump();
            self.expect(Token::LBracket, "[")?;
            loop {
                let name = self.name("a dimension such as DIMENSION_XCC")?;
                let dimension = dimension(&name)?;
                if dimensions.contains(&dimension) {
                    return Err(duplicate_dimension(&name));
                }
                dimensions.push(dimension);
                if self.peek().token != Token::Comma {
                    break;
                }
                self.bump();
            }
            self.expect(Token::RBracket, "]")?;
        }
        self.expect(Token::RParen, ")")?;
        Ok(Expr::Reduce {
            operand,
            op,
            dimensions,
        })
    }

    /// `select(expr, [DIMENSION_…=[i,…], …])`
    fn select(&mut self) -> Result<Expr, ParseError> {
        let open = self.expect(Token::LParen, "(")?;
        let operand = Box::new(self.nested_sum(&open)?);
        self.expect(Token::Comma, ",")?;
        self.expect(Token::LBracket, "[")?;
        let mut selections: Vec<(Dimension, Vec<u32>)> = Vec::new();
        loop {
            let name = self.name("a dimension such as DIMENSION_XCC")?;
            let dimension = dimension(&name)?;
            if selections.iter().any(|(d, _)| *d == dimension) {
                return Err(duplicate_dimension(&name));
            }
            self.expect(Token::Equals, "=")?;
            self.expect(Token::LBracket, "[")?;
            let indices = self.bump();
            if !matches!(indices.token, Token::Number | Token::Indices) {
                return Err(self
                    .unexpected(indices, "indices such as `0` or `0,2`")
                    .with_hint(Some("write indices without spaces, as in `[0,2]`".into())));
            }
            selections.push((dimension, self.indices(&indices.span)?));
            self.expect(Token::RBracket, "]")?;
            if self.peek().token != Token::Comma {
                break;
            }
            self.bump();
        }
        self.expect(Token::RBracket, "]")?;
        self.expect(Token::RParen, ")")?;
        Ok(Expr::Select {
            operand,
            selections,
        })
    }

    fn indices(&self, span: &Range<usize>) -> Result<Vec<u32>, ParseError> {
        let text = self.text(span);
        let mut offset = span.start;
        let mut indices = Vec::new();
        for item in text.split(',') {
            let item_span = offset..offset + item.len();
            offset += item.len() + 1;
            if item.contains(':') {
                return Err(ParseError::new(
                    item_span,
                    "rocprofiler-sdk does not support ranges in select; list the indices",
                ));
            }
            match item.parse::<u32>() {
                Ok(index) if index <= MAX_INDEX => indices.push(index),
                _ => {
                    return Err(ParseError::new(
                        item_span,
                        format!("index `{item}` is out of range (at most {MAX_INDEX})"),
                    ));
                }
            }
        }
        Ok(indices)
    }

    /// `accumulate(COUNTER, NONE|LOW_RES|HIGH_RES)`
    fn accumulate(&mut self) -> Result<Expr, ParseError> {
        self.expect(Token::LParen, "(")?;
        let counter = self.name("a counter name")?;
        self.expect(Token::Comma, ",")?;
        let mode = self.name("NONE, LOW_RES or HIGH_RES")?;
        let resolution = Resolution::from_name(&mode.text).ok_or_else(|| {
            ParseError::new(
                mode.span.clone(),
                format!(
                    "unknown accumulate mode `{}`; expected NONE, LOW_RES or HIGH_RES",
                    mode.text
                ),
            )
            .with_hint(did_you_mean(
                &mode.text,
                Resolution::ALL.map(Resolution::name),
            ))
        })?;
        self.expect(Token::RParen, ")")?;
        Ok(Expr::Accumulate {
            counter,
            resolution,
        })
    }
}

const SPLIT: &str = "split it into derived counters that use each other";

fn dimension(name: &Name) -> Result<Dimension, ParseError> {
    Dimension::from_name(&name.text).ok_or_else(|| {
        ParseError::new(
            name.span.clone(),
            format!("unknown dimension `{}`", name.text),
        )
        .with_hint(did_you_mean(
            &name.text,
            Dimension::ALL.map(Dimension::name),
        ))
    })
}

fn duplicate_dimension(name: &Name) -> ParseError {
    ParseError::new(
        name.span.clone(),
        format!("`{}` is listed twice", name.text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(src: &str) -> String {
        parse(src).unwrap().to_string()
    }

    fn error(src: &str) -> (usize, String) {
        let e = parse(src).unwrap_err();
        (e.offset(), e.message().to_owned())
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(parsed("1+2*3"), "1+2*3");
        assert_eq!(parsed("(1+2)*3"), "(1+2)*3");
        assert_eq!(parsed("8/4/2"), "8/4/2");
        assert_eq!(parsed("8/(4/2)"), "8/(4/2)");
        assert_eq!(parsed("1-(2-3)"), "1-(2-3)");
        let e = parse("A-B-C").unwrap();
        let Expr::Binary { lhs, .. } = e else {
            panic!()
        };
        assert!(matches!(
            *lhs,
            Expr::Binary {
                op: BinaryOp::Subtract,
                ..
            }
        ));
    }

    #[test]
    fn functions() {
        assert_eq!(
            parsed("400*reduce(SQ_WAIT_INST_LDS,sum)/reduce(SQ_WAVES, sum)"),
            "400*reduce(SQ_WAIT_INST_LDS,sum)/reduce(SQ_WAVES,sum)"
        );
        assert_eq!(
            parsed("reduce(TCC_HIT,max,[DIMENSION_XCC, DIMENSION_SHADER_ENGINE])"),
            "reduce(TCC_HIT,max,[DIMENSION_XCC,DIMENSION_SHADER_ENGINE])"
        );
        assert_eq!(
            parsed("select(A,[DIMENSION_XCC=[0],DIMENSION_WGP=[1,3]])"),
            "select(A,[DIMENSION_XCC=[0],DIMENSION_WGP=[1,3]])"
        );
        assert_eq!(
            parsed("accumulate(SQ_LEVEL_WAVES, HIGH_RES)"),
            "accumulate(SQ_LEVEL_WAVES,HIGH_RES)"
        );
    }

    #[test]
    fn references_in_order() {
        let e = parse("reduce(A,sum)+accumulate(B,NONE)*select(C,[DIMENSION_AID=[1]])/A").unwrap();
        let names: Vec<_> = e
            .references()
            .map(|n| (n.as_str(), n.span.clone()))
            .collect();
        assert_eq!(
            names,
            [("A", 7..8), ("B", 25..26), ("C", 40..41), ("A", 63..64)]
        );
    }

    #[test]
    fn errors_point_at_the_column() {
        assert_eq!(
            error("A +"),
            (
                3,
                "expected a number, a name or `(`, found the end of the expression".into()
            )
        );
        assert_eq!(
            error("A B"),
            (
                2,
                "expected an operator or the end of the expression, found `B`".into()
            )
        );
        assert_eq!(error("-A").0, 0);
        assert_eq!(
            error("reduce(A,avg)"),
            (
                9,
                "unknown reduce operation `avg`; rocprofiler-sdk knows sum, avr, min and max"
                    .into()
            )
        );
        assert_eq!(
            parse("reduce(A,avg)").unwrap_err().hint(),
            Some("did you mean `avr`?")
        );
        assert_eq!(error("reduce(A,sum,[DIMENSION_XCD])").0, 14);
        assert_eq!(error("reduce(A,sum,[DIMENSION_XCC,DIMENSION_XCC])").0, 28);
        assert_eq!(error("select(A,[DIMENSION_XCC=[1:3]])").0, 25);
        assert_eq!(error("select(A,[DIMENSION_XCC=[0, 1]])").0, 26);
        assert_eq!(error("select(A,[DIMENSION_XCC=[64]])").0, 25);
        assert_eq!(error("accumulate(A,FULL)").0, 13);
        assert_eq!(error("accumulate(reduce(A,sum),NONE)").0, 11);
        assert_eq!(error("2*1.5").0, 2);
        assert_eq!(error("(A+B").0, 4);
    }

    #[test]
    fn size_is_bounded() {
        // 128 names and 127 operators: 255 nodes.
        let sum = vec!["A"; 128].join("+");
        assert!(parse(&format!("{sum}*reduce(B,sum)")).is_err());
        assert_eq!(
            parse(&format!("{sum}-B")).unwrap_err().offset(),
            sum.len() + 1
        );
        let e = parse(&format!("{sum}+B")).unwrap_err();
        assert_eq!(
            (e.offset(), e.message()),
            (
                sum.len() + 1,
                "the expression is too long: it has more than 256 numbers, names, operators and functions"
            )
        );
        assert_eq!(e.hint(), Some(SPLIT));
        assert!(parse(&sum).is_ok());
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| format!("{}A{}", "(".repeat(depth), ")".repeat(depth));
        assert!(parse(&nested(MAX_NESTING)).is_ok());
        assert_eq!(
            error(&nested(MAX_NESTING + 1)),
            (
                32,
                "parentheses and functions nest more than 32 deep here".into()
            )
        );
        // Functions open a level as parentheses do: the 33rd is the `(` of a `reduce`.
        let functions = format!(
            "{}reduce(A,sum){}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert_eq!(error(&functions).0, 38);
    }
}
