//! What a finished post-step made: the type every kind of step returns, below the steps
//! and the module that runs them.

use std::path::PathBuf;

/// A finished post-step's files and what it prints.
#[derive(Debug, Default)]
pub struct Done {
    pub paths: Vec<PathBuf>,
    pub text: String,
    /// Why the files hold only part of the run's records (they say so too), if they do.
    pub partial: Option<String>,
}
