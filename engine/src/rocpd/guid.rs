//! A rocpd database's identity.

use uuid::{NoContext, Timestamp, Uuid};

/// A database's identity: a time-ordered UUID (version 7, from the start of its first
/// process), stored in every row and, with `-` as `_`, appended to its table names.
#[derive(Debug, Clone, Copy)]
pub struct Guid(Uuid);

impl Guid {
    pub fn new(start_ns: u64) -> Guid {
        let (seconds, nanos) = (start_ns / 1_000_000_000, start_ns % 1_000_000_000);
        Guid(Uuid::new_v7(Timestamp::from_unix(
            NoContext,
            seconds,
            nanos as u32,
        )))
    }

    /// What table names end with: `_` and the UUID with `_` for `-`.
    pub fn suffix(&self) -> String {
        format!("_{}", self.0.hyphenated()).replace('-', "_")
    }
}

impl std::fmt::Display for Guid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_is_the_guid_with_underscores() {
        let guid = Guid::new(1_700_000_000_000_000_000);
        let text = guid.to_string();
        assert_eq!(text.len(), 36);
        assert_eq!(guid.suffix(), format!("_{}", text.replace('-', "_")));
    }
}
