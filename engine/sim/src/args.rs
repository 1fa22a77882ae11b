//! HIP calls' arguments, as the real SDK gives them: `_EXT` records that hold them, and
//! `rocprofiler_iterate_buffer_tracing_record_args`, which names, types (as `typeid(T)
//! .name()` does) and prints them (`fmt`'s forms: `0x` addresses, `{z=…, y=…, x=…}` for a
//! `dim3`, the enumerator's suffix for a `hipMemcpyKind`). The records hold the values the
//! simulated calls take; only this iteration reads them, as only the real SDK reads its
//! `rocprofiler_hip_api_args_t` union.

use std::ffi::{CStr, CString, c_int, c_void};

use rocflow_core::abi::{ApiRecord, BufferArgsCallback, RecordHeader, Status, category, status};
use rocflow_core::sdk::Domain;

use crate::sdk::sdk;

/// The simulated `rocprofiler_buffer_tracing_hip_api_ext_record_t`: the plain record, then
/// the call's argument values.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HipApiExtRecord {
    pub base: ApiRecord,
    pub args: CallArgs,
}

/// A simulated call's argument values, read by its function:
/// `hipLaunchKernel`: kernel index in the scenario, stream; `hipGraphLaunch`: executable
/// graph, stream; `hipMemcpy`: dst, src, bytes, kind; `hipMemcpyAsync`: the same and
/// stream; `hipMalloc`: the pointer's address, bytes; `hipFree`: the pointer;
/// `hipHostMalloc` and `hipHostFree` as `hipMalloc` and `hipFree` (flags 0).
pub type CallArgs = [u64; 5];

/// Where the simulated application keeps what it passes by address.
const HOST_STACK: u64 = 0x7ffd_4a00_0000;
/// Where the simulated kernels' host stubs are.
const KERNEL_STUBS: u64 = 0x5555_5a00_0000;

/// The arguments of a call: name, `typeid` name (static strings, as the real SDK's are),
/// value text.
fn arguments(function: &str, values: CallArgs) -> Vec<(&'static CStr, &'static CStr, String)> {
    let [a, b, c, d, e] = values;
    let address = |v: u64| format!("{v:#x}");
    match function {
        "hipLaunchKernel" => {
            let Some(kernel) = sdk().and_then(|s| s.scenario.kernels.get(a as usize)) else {
                return Vec::new();
            };
            let dim3 = |[x, y, z]: [u32; 3]| format!("{{z={z}, y={y}, x={x}}}");
            let [gx, gy, gz] = kernel.grid;
            let [wx, wy, wz] = kernel.workgroup;
            let blocks = [gx / wx.max(1), gy / wy.max(1), gz / wz.max(1)];
            vec![
                (
                    c"function_address",
                    c"PKv",
                    address(KERNEL_STUBS + a * 0x40),
                ),
                (c"numBlocks", c"4dim3", dim3(blocks)),
                (c"dimBlocks", c"4dim3", dim3(kernel.workgroup)),
                (c"args", c"PPv", address(HOST_STACK + 0x100)),
                (c"sharedMemBytes", c"m", "0".into()),
                (c"stream", c"P12ihipStream_t", address(b)),
            ]
        }
        "hipMemcpy" | "hipMemcpyAsync" => {
            let kind = [
                "HostToHost",
                "HostToDevice",
                "DeviceToHost",
                "DeviceToDevice",
            ];
            let mut args = vec![
                (c"dst", c"Pv", address(a)),
                (c"src", c"PKv", address(b)),
                (c"sizeBytes", c"m", c.to_string()),
                (c"kind", c"13hipMemcpyKind", kind[d as usize % 4].into()),
            ];
            if function == "hipMemcpyAsync" {
                args.push((c"stream", c"P12ihipStream_t", address(e)));
            }
            args
        }
        "hipMalloc" => vec![(c"ptr", c"PPv", address(a)), (c"size", c"m", b.to_string())],
        "hipFree" => vec![(c"ptr", c"Pv", address(a))],
        "hipHostMalloc" => vec![
            (c"ptr", c"PPv", address(a)),
            (c"size", c"m", b.to_string()),
            (c"flags", c"j", "0".into()),
        ],
        "hipHostFree" => vec![(c"ptr", c"Pv", address(a))],
        "hipGraphLaunch" => vec![
            (c"graphExec", c"P12hipGraphExec", address(a)),
            (c"stream", c"P12ihipStream_t", address(b)),
        ],
        _ => Vec::new(),
    }
}

/// The address a call's pointer argument is kept at.
pub fn on_stack(offset: u64) -> u64 {
    HOST_STACK + offset
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_buffer_tracing_record_args(
    record: RecordHeader,
    callback: Option<BufferArgsCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    let domain = (record.category == category::TRACING)
        .then(|| Domain::from_sdk_value(record.kind as i32))
        .flatten();
    match domain {
        None => return status::INVALID_ARGUMENT,
        // As the real SDK: only the `_EXT` records hold arguments.
        Some(d) if !d.has_args() => return status::NOT_IMPLEMENTED,
        Some(_) => {}
    }
    // SAFETY: an `_EXT` record this SDK delivered.
    let ext = unsafe { &*record.payload.cast::<HipApiExtRecord>() };
    let operation = ext.base.operation;
    let function = Domain::HipRuntimeApi
        .operation_name(operation)
        .unwrap_or_default();
    for (i, (name, type_name, value)) in arguments(function, ext.args).into_iter().enumerate() {
        let value = CString::new(value).expect("no NUL");
        let pointers = type_name
            .to_bytes()
            .iter()
            .take_while(|&&c| c == b'P')
            .count() as i32;
        let address = &ext.args as *const CallArgs as *const c_void;
        // SAFETY: the tool's callback, with NUL-terminated strings valid for the call.
        let stop: c_int = unsafe {
            callback(
                record.kind as i32,
                operation,
                i as u32,
                address,
                pointers,
                type_name.as_ptr(),
                name.as_ptr(),
                value.as_ptr(),
                data,
            )
        };
        if stop != 0 {
            break;
        }
    }
    status::SUCCESS
}

#[cfg(test)]
mod tests {
    use std::ffi::c_char;

    use rocflow_core::abi::{CorrelationId, UserData};

    use super::*;

    /// Collects "name type value" per argument.
    unsafe extern "C" fn collect(
        _kind: i32,
        _operation: i32,
        _arg_number: u32,
        _arg_value_addr: *const c_void,
        _arg_indirection_count: i32,
        arg_type: *const c_char,
        arg_name: *const c_char,
        arg_value_str: *const c_char,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the strings are the iteration's, `data` the test's vector.
        unsafe {
            let text = |p| CStr::from_ptr(p).to_string_lossy().into_owned();
            let args = &mut *data.cast::<Vec<String>>();
            args.push([arg_name, arg_type, arg_value_str].map(text).join(" "));
        }
        0
    }

    #[test]
    fn only_ext_records_have_arguments_as_on_the_real_sdk() {
        let operation = Domain::HipRuntimeApi
            .operations()
            .iter()
            .find(|(_, name)| *name == "hipMemcpy")
            .unwrap()
            .0;
        let mut record = HipApiExtRecord {
            base: ApiRecord {
                size: size_of::<HipApiExtRecord>() as u64,
                kind: Domain::HipRuntimeApiExt.sdk_value(),
                operation,
                correlation_id: CorrelationId {
                    internal: 1,
                    external: UserData { value: 0 },
                    ancestor: 0,
                },
                start_timestamp: 1,
                end_timestamp: 2,
                thread_id: 3,
            },
            args: [0x7f00, 0x7e00, 4096, 2, 0],
        };
        let mut args: Vec<String> = Vec::new();
        let mut iterate = |kind: Domain, args: &mut Vec<String>| {
            let header = RecordHeader {
                category: category::TRACING,
                kind: kind.sdk_value() as u32,
                payload: (&mut record as *mut HipApiExtRecord).cast(),
            };
            // SAFETY: a record of this SDK's layout, and a callback of the SDK's type.
            unsafe {
                rocprofiler_iterate_buffer_tracing_record_args(
                    header,
                    Some(collect),
                    (args as *mut Vec<String>).cast(),
                )
            }
        };
        assert_eq!(
            iterate(Domain::HipRuntimeApiExt, &mut args),
            status::SUCCESS
        );
        assert_eq!(
            args,
            [
                "dst Pv 0x7f00",
                "src PKv 0x7e00",
                "sizeBytes m 4096",
                "kind 13hipMemcpyKind DeviceToHost"
            ]
        );
        args.clear();
        let plain = iterate(Domain::HipRuntimeApi, &mut args);
        assert_eq!((plain, args.len()), (status::NOT_IMPLEMENTED, 0));
    }
}
