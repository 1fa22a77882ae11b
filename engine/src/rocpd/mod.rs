//! The rocpd database format, which the rocpd sink writes and the rocpd source reads:
//! AMD's schema and a database's GUID. Sources mirror sinks; what both must agree on lives
//! here, below both.

mod guid;
pub mod schema;

pub use guid::Guid;
