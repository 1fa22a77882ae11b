//! rocprofiler-sdk's performance counter definitions: the YAML files in both schemas the
//! SDK has used, the derived-counter expression language, resolution of derived counters
//! to the hardware counters they need, checks, and migration between the schemas.
//!
//! The crate stands alone (no command line, no rocflow engine): errors are its own
//! [`Diagnostic`]s with file, byte range, message and hint, for any front end to render.
//!
//! ```
//! use rocflow_counters::{Definitions, Source};
//!
//! let defs = Definitions::parse(&Source::new("counter_defs.yaml", "
//! rocprofiler-sdk:
//!   counters-schema-version: 1
//!   counters:
//!   - name: GRBM_GUI_ACTIVE
//!     description: The GUI is active.
//!     definitions:
//!     - architectures: [gfx90a, gfx942]
//!       block: GRBM
//!       event: 2
//!   - name: GPU_BUSY_CYCLES
//!     description: Busy cycles over all XCCs.
//!     definitions:
//!     - architectures: [gfx942]
//!       expression: reduce(GRBM_GUI_ACTIVE,sum)
//! ")).unwrap();
//! assert!(defs.is_defined("GPU_BUSY_CYCLES", "gfx942"));
//! assert!(!defs.is_defined("GPU_BUSY_CYCLES", "gfx90a"));
//! let needs = defs.resolver("gfx942").requirements("GPU_BUSY_CYCLES").unwrap();
//! assert!(needs.hardware.contains("GRBM_GUI_ACTIVE"));
//! assert!(rocflow_counters::check(&defs).is_empty());
//! ```

mod check;
mod counter;
mod definitions;
mod diagnostic;
pub mod expr;
pub mod migrate;
mod resolve;
mod schema;
pub mod yaml;

pub use check::check;
pub use counter::{Counter, Definition, DefinitionKind, ExpressionSource};
pub use definitions::{Definitions, INSTALLED_PATH, default_locations, locate, locations_with};
pub use diagnostic::{Diagnostic, Error, Location, Severity, Source};
pub use resolve::{AGENT_PROPERTIES, Requirements, ResolveError, Resolved, Resolver};
pub use schema::Schema;
pub use schema::standard::JSON_SCHEMA;
