//! The application's `ROCP_TOOL_LIBRARIES`: rocflow's tool joins the tools the user already
//! names there (another rocprofiler-sdk client, such as PyTorch's Kineto), never replaces
//! them, so both are configured by the SDK and both get their records.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// The list with `tool` after the user's tools (`user`: the value rocflow was started
/// with). A list of several ends with `:`: rocprofiler-sdk 1.0 reads only the entries a
/// `:` follows, so `a:b` would configure `a` alone. A tool named once stays named once.
pub fn with_tool(user: Option<&OsStr>, tool: &OsStr) -> OsString {
    let others: Vec<&[u8]> = user
        .map(OsStr::as_bytes)
        .unwrap_or_default()
        .split(|b| *b == b':')
        .filter(|entry| !entry.is_empty() && *entry != tool.as_bytes())
        .collect();
    if others.is_empty() {
        return tool.to_owned();
    }
    let mut list = Vec::new();
    for entry in others.into_iter().chain([tool.as_bytes()]) {
        list.extend_from_slice(entry);
        list.push(b':');
    }
    OsStr::from_bytes(&list).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(user: Option<&str>) -> String {
        let user = user.map(OsStr::new);
        with_tool(user, OsStr::new("/t/librocflow_tool.so"))
            .into_string()
            .unwrap()
    }

    #[test]
    fn the_tool_alone_is_one_entry() {
        assert_eq!(list(None), "/t/librocflow_tool.so");
        assert_eq!(list(Some("")), "/t/librocflow_tool.so");
        assert_eq!(
            list(Some("/t/librocflow_tool.so:")),
            "/t/librocflow_tool.so"
        );
    }

    #[test]
    fn the_users_tools_come_first_and_every_entry_is_followed_by_a_colon() {
        assert_eq!(
            list(Some("libkineto.so")),
            "libkineto.so:/t/librocflow_tool.so:"
        );
        assert_eq!(
            list(Some("a.so::b.so:/t/librocflow_tool.so")),
            "a.so:b.so:/t/librocflow_tool.so:"
        );
    }
}
