//! `check`: every derived counter's expression parses, every name it uses resolves on
//! every architecture it is defined for, and no derived counters refer to each other in
//! a cycle.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::counter::{Counter, DefinitionKind, ExpressionSource};
use crate::definitions::Definitions;
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::resolve::{ResolveError, Resolver};

/// Every problem found, ordered by place in the file.
pub fn check(definitions: &Definitions) -> Vec<Diagnostic> {
    let resolvers: BTreeMap<&str, Resolver<'_>> = definitions
        .architectures()
        .into_iter()
        .map(|arch| (arch, definitions.resolver(arch)))
        .collect();
    let mut findings = Vec::new();
    // A cycle or a bad `accumulate` is found on each architecture it occurs on: each is
    // reported once, with them.
    let mut graph_problems: BTreeMap<String, (Diagnostic, BTreeSet<&str>)> = BTreeMap::new();
    for resolver in resolvers.values() {
        for error in resolver.graph_errors() {
            let (key, diagnostic) = graph_problem(definitions, error);
            graph_problems
                .entry(key)
                .or_insert((diagnostic, BTreeSet::new()))
                .1
                .insert(resolver.arch());
        }
    }
    for counter in definitions.counters() {
        for definition in &counter.definitions {
            let DefinitionKind::Derived { expression } = &definition.kind else {
                continue;
            };
            let archs: Vec<&Resolver<'_>> = definition
                .architectures
                .iter()
                .map(|a| &resolvers[a.as_str()])
                .collect();
            match expression.parsed() {
                Err(error) => findings.push(
                    Diagnostic::error(format!(
                        "the expression of `{}` does not parse: {}",
                        counter.name,
                        error.message()
                    ))
                    .at(expression.location_of(error.span()))
                    .maybe_hint(error.hint().map(str::to_owned)),
                ),
                Ok(_) => findings.extend(unresolved(definitions, counter, expression, &archs)),
            }
        }
    }
    findings.extend(graph_problems.into_values().map(|(diagnostic, archs)| {
        let archs: Vec<&str> = archs.into_iter().collect();
        diagnostic.note(format!("on {}", archs.join(", ")))
    }));
    findings.sort_by_key(|d| {
        d.location
            .as_ref()
            .map(|l| (l.source.path().to_owned(), l.span.start))
    });
    findings
}

/// Names in `expression` that some of the definition's architectures do not define.
fn unresolved(
    definitions: &Definitions,
    counter: &Counter,
    expression: &ExpressionSource,
    resolvers: &[&Resolver<'_>],
) -> Vec<Diagnostic> {
    let expr = expression.parsed().expect("checked by the caller");
    let mut seen = HashSet::new();
    let mut findings = Vec::new();
    for name in expr.references().filter(|n| seen.insert(n.as_str())) {
        let missing: Vec<&str> = resolvers
            .iter()
            .filter(|r| matches!(r.lookup(name.as_str()), Ok(None)))
            .map(|r| r.arch())
            .collect();
        if missing.is_empty() {
            continue;
        }
        let hint = did_you_mean(
            name.as_str(),
            definitions
                .counters()
                .iter()
                .filter(|c| c.definition_for(missing[0]).is_some())
                .map(|c| c.name.as_str()),
        );
        findings.push(
            Diagnostic::error(format!(
                "`{}` is not defined for {}",
                name.as_str(),
                missing.join(", ")
            ))
            .at(expression.location_of(name.span.clone()))
            .note(format!("used by `{}`", counter.name))
            .maybe_hint(hint),
        );
    }
    findings
}

/// A cycle or a bad `accumulate`, keyed so that each is reported once however it was
/// entered, and where it is reported: at the counter the cycle was entered at, or the one
/// that accumulates.
fn graph_problem(definitions: &Definitions, error: ResolveError) -> (String, Diagnostic) {
    let (key, at) = match &error {
        ResolveError::Cycle { cycle } => {
            // The same cycle entered at another counter is a rotation of this one.
            let members = &cycle[..cycle.len() - 1];
            let first = (members.iter().enumerate())
                .min_by_key(|(_, n)| *n)
                .map_or(0, |(i, _)| i);
            let mut rotated: Vec<&str> = members[first..]
                .iter()
                .chain(&members[..first])
                .map(String::as_str)
                .collect();
            rotated.push(rotated[0]);
            (format!("cycle {}", rotated.join(" -> ")), &cycle[0])
        }
        ResolveError::BadAccumulate {
            counter, target, ..
        } => (format!("accumulate {counter} {target}"), counter),
        _ => unreachable!("graph_errors gives cycles and accumulates only"),
    };
    let location = definitions.get(at).map(|c| c.location.clone());
    let diagnostic = Diagnostic::error(error.to_string());
    let diagnostic = match location {
        Some(location) => diagnostic.at(location),
        None => diagnostic,
    };
    (key, diagnostic)
}
