//! Kernel names as binutils' `c++filt` demangles them: the judge of rocflow's demangler in
//! every test that expects a demangled name, since it is not rocflow's own code.

use std::collections::HashMap;
use std::process::Command;

/// `names`, each as `c++filt` demangles it (a name that is not mangled stays as it is).
pub fn demangle(names: &[String]) -> Vec<String> {
    if names.is_empty() {
        return Vec::new();
    }
    let out = Command::new("c++filt")
        .args(names)
        .output()
        .expect("c++filt runs (Debian: binutils; tests/run-all installs it)");
    assert!(out.status.success(), "{}", super::text(&out.stderr));
    let demangled: Vec<String> = super::text(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(demangled.len(), names.len(), "c++filt {names:?}");
    demangled
}

/// [`demangle`] name by name, each name asked of `c++filt` once, for a test that meets the
/// names as it reads a run.
#[derive(Debug, Default)]
pub struct Demangler(HashMap<String, String>);

impl Demangler {
    pub fn name(&mut self, mangled: &str) -> String {
        (self.0.entry(mangled.to_owned()))
            .or_insert_with(|| demangle(&[mangled.to_owned()]).remove(0))
            .clone()
    }
}
