//! The names rocprofiler-sdk gives its tracing kinds and their operations, as rocprofv3's
//! `strings` lists them for scripts to look records' `kind` and `operation` up in: an
//! array indexed by the kind's value, each kind's operations indexed by the operation's
//! value, what the SDK leaves out empty. The names are the SDK's own (as
//! `rocprofiler_query_buffer_tracing_kind_operation_name` answers): API functions by
//! their names (OpenMP's with `omp_`), the SDK's enumerations with their kind's prefix and
//! a `NONE` at 0.

use serde::Serialize;

use crate::sdk::Domain;

/// A kind's entry in `strings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindNames {
    kind: String,
    operations: Vec<String>,
}

/// A kind of `rocprofiler_callback_tracing_kind_t`, by value.
enum Callback {
    /// A kind with the same name and operations as this buffer-tracing domain.
    Like(Domain),
    None,
    CodeObject,
}

/// `rocprofiler_callback_tracing_kind_t`, in value order from 0.
const CALLBACK_KINDS: &[Callback] = &[
    Callback::None,
    Callback::Like(Domain::HsaCoreApi),
    Callback::Like(Domain::HsaAmdExtApi),
    Callback::Like(Domain::HsaImageExtApi),
    Callback::Like(Domain::HsaFinalizeExtApi),
    Callback::Like(Domain::HipRuntimeApi),
    Callback::Like(Domain::HipCompilerApi),
    Callback::Like(Domain::MarkerCoreApi),
    Callback::Like(Domain::MarkerControlApi),
    Callback::Like(Domain::MarkerNameApi),
    Callback::CodeObject,
    Callback::Like(Domain::ScratchMemory),
    Callback::Like(Domain::KernelDispatch),
    Callback::Like(Domain::MemoryCopy),
    Callback::Like(Domain::RcclApi),
    Callback::Like(Domain::Ompt),
    Callback::Like(Domain::MemoryAllocation),
    Callback::Like(Domain::RuntimeInitialization),
    Callback::Like(Domain::RocdecodeApi),
    Callback::Like(Domain::RocjpegApi),
    Callback::Like(Domain::HipStream),
    Callback::Like(Domain::MarkerCoreRangeApi),
];

/// The buffer-tracing kinds rocflow has no domain for, by value: they have no operations.
const OTHER_BUFFER_KINDS: &[(i32, &str)] = &[(0, "NONE"), (13, "CORRELATION_ID_RETIREMENT")];

/// `rocprofiler_code_object_operation_t`.
const CODE_OBJECT_OPERATIONS: &[(i32, &str)] = &[
    (1, "LOAD"),
    (2, "DEVICE_KERNEL_SYMBOL_REGISTER"),
    (3, "HOST_KERNEL_SYMBOL_REGISTER"),
];

/// The names of `rocprofiler_buffer_tracing_kind_t`'s kinds, indexed by value: those of
/// SDK 1.0, whose document this is (it has no arrays of the domains newer SDKs added).
pub fn buffer_kinds() -> Vec<KindNames> {
    let of_1_0 = || Domain::ALL.iter().filter(|d| d.since().is_none());
    let last = of_1_0().map(|d| d.sdk_value()).max().unwrap_or(0);
    let mut kinds = vec![KindNames::empty(); last as usize + 1];
    for &domain in of_1_0() {
        kinds[domain.sdk_value() as usize] = KindNames::of(domain);
    }
    for &(value, name) in OTHER_BUFFER_KINDS {
        kinds[value as usize].kind = name.to_owned();
    }
    kinds
}

/// The names of `rocprofiler_callback_tracing_kind_t`'s kinds, indexed by value.
pub fn callback_kinds() -> Vec<KindNames> {
    (CALLBACK_KINDS.iter())
        .map(|kind| match kind {
            Callback::Like(domain) => KindNames::of(*domain),
            Callback::None => KindNames {
                kind: "NONE".to_owned(),
                operations: Vec::new(),
            },
            Callback::CodeObject => {
                let kind = "CODE_OBJECT";
                KindNames {
                    kind: kind.to_owned(),
                    operations: enumeration(kind, CODE_OBJECT_OPERATIONS),
                }
            }
        })
        .collect()
}

/// The SDK's name of a domain: its constant's suffix.
pub fn kind_name(domain: Domain) -> String {
    domain.name().to_ascii_uppercase()
}

impl KindNames {
    fn empty() -> KindNames {
        KindNames {
            kind: String::new(),
            operations: Vec::new(),
        }
    }

    fn of(domain: Domain) -> KindNames {
        let kind = kind_name(domain);
        let ops = domain.operations();
        let operations = match domain {
            Domain::MemoryCopy
            | Domain::KernelDispatch
            | Domain::ScratchMemory
            | Domain::MemoryAllocation
            | Domain::RuntimeInitialization
            | Domain::HipStream => enumeration(&kind, ops),
            Domain::Ompt => indexed(ops, |op| format!("omp_{op}")),
            // The SDK's constants; the one operation of dropped events is its kind's.
            _ if kind.starts_with("KFD_") => indexed(ops, |op| match kind.ends_with(op) {
                true => format!("ROCPROFILER_{kind}"),
                false => format!("ROCPROFILER_{kind}_{op}"),
            }),
            _ => indexed(ops, str::to_owned),
        };
        KindNames { kind, operations }
    }
}

/// The operations of one of the SDK's enumerations: `KIND_NONE` at 0, then `KIND_OP`.
fn enumeration(kind: &str, ops: &[(i32, &str)]) -> Vec<String> {
    let mut names = indexed(ops, |op| format!("{kind}_{op}"));
    if names.is_empty() {
        names.push(String::new());
    }
    names[0] = format!("{kind}_NONE");
    names
}

/// `ops` named by `name`, each at its id, the ids without an operation empty.
fn indexed(ops: &[(i32, &str)], name: impl Fn(&str) -> String) -> Vec<String> {
    let len = ops
        .iter()
        .map(|&(id, _)| id as usize + 1)
        .max()
        .unwrap_or(0);
    let mut names = vec![String::new(); len];
    for &(id, op) in ops {
        names[id as usize] = name(op);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names as the real SDK answers them (`rocprofiler_query_buffer_tracing_kind_name`
    /// and its operation's, asked of AMD's library in `../shared/realsdk`).
    #[test]
    fn kinds_and_operations_are_named_as_the_sdk_names_them() {
        let buffer = buffer_kinds();
        assert_eq!(buffer.len(), 33);
        assert_eq!(buffer[0].kind, "NONE");
        assert_eq!(buffer[13].kind, "CORRELATION_ID_RETIREMENT");
        assert_eq!(buffer[11].kind, "KERNEL_DISPATCH");
        assert_eq!(
            buffer[11].operations,
            [
                "KERNEL_DISPATCH_NONE",
                "KERNEL_DISPATCH_ENQUEUE",
                "KERNEL_DISPATCH_COMPLETE"
            ]
        );
        assert_eq!(buffer[10].operations[2], "MEMORY_COPY_HOST_TO_DEVICE");
        assert_eq!(buffer[1].operations[0], "hsa_init");
        assert_eq!(buffer[32].operations[1], "roctxThreadRangeA");
        assert_eq!(buffer[15].operations[0], "omp_thread_begin");
        assert_eq!(
            buffer[28].operations,
            ["ROCPROFILER_KFD_EVENT_DROPPED_EVENTS"]
        );
        assert_eq!(
            buffer[24].operations[0],
            "ROCPROFILER_KFD_EVENT_PAGE_MIGRATE_PREFETCH"
        );
        let callback = callback_kinds();
        assert_eq!(callback.len(), 22);
        assert_eq!(callback[10].kind, "CODE_OBJECT");
        assert_eq!(
            callback[10].operations[2],
            "CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER"
        );
        assert_eq!(callback[12].kind, "KERNEL_DISPATCH");
        assert_eq!(callback[21].kind, "MARKER_CORE_RANGE_API");
    }
}
