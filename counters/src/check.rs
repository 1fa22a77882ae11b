//! `check`: every derived counter's expression parses, every name it uses resolves on
//! every architecture it is defined for, and no derived counters refer to each other in
//! a cycle.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::definitions::{Counter, DefinitionKind, Definitions, ExpressionSource};
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
    // A cycle or a bad `accumulate` shows up from every counter that leads to it: each is
    // reported once, with the architectures it occurs on.
    let mut graph_problems: BTreeMap<String, (Diagnostic, BTreeSet<&str>)> = BTreeMap::new();
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
                Ok(_) => {
                    findings.extend(unresolved(definitions, counter, expression, &archs));
                    for resolver in archs {
                        if let Some((key, diagnostic)) =
                            graph_problem(definitions, counter, resolver)
                        {
                            graph_problems
                                .entry(key)
                                .or_insert((diagnostic, BTreeSet::new()))
                                .1
                                .insert(resolver.arch());
                        }
                    }
                }
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

/// A cycle or a bad `accumulate` reached from `counter`, keyed so that each is reported
/// once however many counters lead to it.
fn graph_problem(
    definitions: &Definitions,
    counter: &Counter,
    resolver: &Resolver<'_>,
) -> Option<(String, Diagnostic)> {
    let error = resolver.requirements(&counter.name).err()?;
    let key = match &error {
        ResolveError::Cycle { cycle } => {
            // The same cycle entered at another counter is a rotation of this one.
            let members = &cycle[..cycle.len() - 1];
            let first = members.iter().enumerate().min_by_key(|(_, n)| *n)?.0;
            let mut rotated: Vec<&str> = members[first..]
                .iter()
                .chain(&members[..first])
                .map(String::as_str)
                .collect();
            rotated.push(rotated[0]);
            format!("cycle {}", rotated.join(" -> "))
        }
        ResolveError::BadAccumulate {
            counter, target, ..
        } => {
            format!("accumulate {counter} {target}")
        }
        // Unknown names and parse errors are reported where they are written.
        _ => return None,
    };
    let at = match &error {
        ResolveError::BadAccumulate { counter: inner, .. } => {
            definitions.get(inner).unwrap_or(counter)
        }
        _ => counter,
    };
    Some((
        key,
        Diagnostic::error(error.to_string()).at(at.location.clone()),
    ))
}
