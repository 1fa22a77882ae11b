//! The event attributes of the archive: the fixed ones, all unsigned 64-bit integers,
//! then API calls' arguments, string attributes numbered after them. [`archive`] writes a
//! value by its attribute's type, [`definitions`] defines each attribute, and
//! [`events`] attaches them.
//!
//! [`archive`]: super::archive
//! [`definitions`]: super::definitions
//! [`events`]: super::events

/// Event attributes, all unsigned 64-bit integers: id, name, description.
pub const ATTRIBUTES: [(u32, &str, &str); 4] = [
    (
        CORRELATION_ID,
        "correlation_id",
        "rocprofiler-sdk's internal correlation id: an API call and the GPU work it launched share it",
    ),
    (
        EXTERNAL_ID,
        "external_id",
        "the correlation id the application or a marker range set",
    ),
    (DISPATCH_ID, "dispatch_id", "the kernel dispatch's id"),
    (BYTES, "bytes", "bytes copied or allocated"),
];
/// API calls' arguments are string attributes (the SDK's text), one per name and type,
/// numbered from here on.
pub const FIRST_ARGUMENT: u32 = ATTRIBUTES.len() as u32;

/// Whether attribute `id` is an API call's argument, whose values are string ids.
pub fn is_argument(id: u32) -> bool {
    id >= FIRST_ARGUMENT
}

pub const CORRELATION_ID: u32 = 0;
pub const EXTERNAL_ID: u32 = 1;
pub const DISPATCH_ID: u32 = 2;
pub const BYTES: u32 = 3;
