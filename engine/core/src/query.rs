//! The SDK's answers about the device: its agents, each agent's counters with their
//! dimensions, and its PC sampling configurations. The tool asks at initialize, and
//! `rocflow agents` asks the SDK directly, as `rocprofv3-avail` does: these queries need no
//! configured tool.

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::abi::{
    self, AgentV0, AgentsCallback, CounterDimensionInfo, CounterInfoV0, CountersCallback,
    DimensionsCallback, Handle, PcConfigurationsCallback, PcSamplingConfiguration, Status,
};

/// The SDK's query entry points.
#[derive(Clone, Copy)]
pub struct Queries {
    agents: unsafe extern "C" fn(c_int, Option<AgentsCallback>, usize, *mut c_void) -> Status,
    counters: unsafe extern "C" fn(Handle, Option<CountersCallback>, *mut c_void) -> Status,
    counter_info: unsafe extern "C" fn(Handle, c_int, *mut c_void) -> Status,
    dimensions: unsafe extern "C" fn(Handle, Option<DimensionsCallback>, *mut c_void) -> Status,
    pc_sampling:
        unsafe extern "C" fn(Handle, Option<PcConfigurationsCallback>, *mut c_void) -> Status,
}

/// A counter as the SDK describes it.
#[derive(Debug, Clone)]
pub struct Counter {
    pub id: Handle,
    pub name: String,
    pub description: String,
    pub block: String,
    /// Empty for a hardware counter.
    pub expression: String,
    /// Computed from others (`is_derived`).
    pub derived: bool,
    /// A property of the agent rather than a count (`is_constant`).
    pub constant: bool,
}

/// A counter's dimension: the SDK's id, name and size.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub id: u64,
    pub name: String,
    pub size: u64,
}

/// A C string of the SDK's, empty for null. It takes only pointers the SDK handed out
/// (names in its structs), hence safe to call.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the SDK passes NUL-terminated strings.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// Appends the `count` items at `items` to the `Vec<T>` at `data`.
///
/// # Safety
/// `data` is a `Vec<T>`; `items` is null or points at `count` items.
unsafe fn extend<T: Copy>(data: *mut c_void, items: *const T, count: usize) {
    if items.is_null() {
        return;
    }
    // SAFETY: as the caller promises.
    unsafe { (*data.cast::<Vec<T>>()).extend_from_slice(std::slice::from_raw_parts(items, count)) }
}

impl Queries {
    /// The queries of an SDK, from its entry points.
    ///
    /// # Safety
    /// Each is the SDK's function of that name, with the type its headers declare:
    /// `rocprofiler_query_available_agents`, `rocprofiler_iterate_agent_supported_counters`,
    /// `rocprofiler_query_counter_info`, `rocprofiler_iterate_counter_dimensions`,
    /// `rocprofiler_query_pc_sampling_agent_configurations`.
    pub unsafe fn new(
        agents: unsafe extern "C" fn(c_int, Option<AgentsCallback>, usize, *mut c_void) -> Status,
        counters: unsafe extern "C" fn(Handle, Option<CountersCallback>, *mut c_void) -> Status,
        counter_info: unsafe extern "C" fn(Handle, c_int, *mut c_void) -> Status,
        dimensions: unsafe extern "C" fn(Handle, Option<DimensionsCallback>, *mut c_void) -> Status,
        pc_sampling: unsafe extern "C" fn(
            Handle,
            Option<PcConfigurationsCallback>,
            *mut c_void,
        ) -> Status,
    ) -> Queries {
        Queries {
            agents,
            counters,
            counter_info,
            dimensions,
            pc_sampling,
        }
    }

    /// Every agent, CPUs and GPUs, in the SDK's order.
    pub fn agents(&self) -> Result<Vec<AgentV0>, Status> {
        unsafe extern "C" fn collect(
            _version: c_int,
            agents: *mut *const c_void,
            count: usize,
            data: *mut c_void,
        ) -> Status {
            // SAFETY: `data` is the Vec `gathered` passes; the SDK passes `count` pointers, each
            // at a `rocprofiler_agent_v0_t`.
            unsafe {
                let out = &mut *data.cast::<Vec<AgentV0>>();
                for i in 0..count {
                    out.push(*(*agents.add(i)).cast::<AgentV0>());
                }
            }
            abi::status::SUCCESS
        }
        // SAFETY: the callback has the SDK's type.
        gathered(|data| unsafe {
            (self.agents)(
                abi::AGENT_INFO_VERSION_0,
                Some(collect),
                size_of::<AgentV0>(),
                data,
            )
        })
    }

    /// The counters `agent` supports.
    pub fn counters(&self, agent: Handle) -> Result<Vec<Counter>, Status> {
        unsafe extern "C" fn collect(
            _agent: Handle,
            ids: *mut Handle,
            count: usize,
            data: *mut c_void,
        ) -> Status {
            // SAFETY: `data` is the Vec `gathered` passes; the SDK passes `count` ids.
            unsafe { extend(data, ids, count) };
            abi::status::SUCCESS
        }
        // SAFETY: the callback has the SDK's type.
        let ids: Vec<Handle> =
            gathered(|data| unsafe { (self.counters)(agent, Some(collect), data) })?;
        ids.into_iter()
            .map(|id| {
                // SAFETY: every field is an integer or a nullable pointer.
                let mut info: CounterInfoV0 = unsafe { std::mem::zeroed() };
                // SAFETY: room for the version-0 info.
                let status = unsafe {
                    (self.counter_info)(
                        id,
                        abi::COUNTER_INFO_VERSION_0,
                        (&mut info as *mut CounterInfoV0).cast(),
                    )
                };
                checked(status, ())?;
                Ok(Counter {
                    id,
                    name: text(info.name),
                    description: text(info.description),
                    block: text(info.block),
                    expression: text(info.expression),
                    // The two bit fields `is_constant` (bit 0) and `is_derived` (bit 1).
                    derived: info.is_constant & 2 != 0,
                    constant: info.is_constant & 1 != 0,
                })
            })
            .collect()
    }

    /// A counter's dimensions.
    pub fn dimensions(&self, counter: Handle) -> Result<Vec<Dimension>, Status> {
        unsafe extern "C" fn collect(
            _counter: Handle,
            dims: *const CounterDimensionInfo,
            count: usize,
            data: *mut c_void,
        ) -> Status {
            // SAFETY: `data` is the Vec `gathered` passes; the SDK passes `count` dimensions.
            unsafe { extend(data, dims, count) };
            abi::status::SUCCESS
        }
        // SAFETY: the callback has the SDK's type.
        let dims: Vec<CounterDimensionInfo> =
            gathered(|data| unsafe { (self.dimensions)(counter, Some(collect), data) })?;
        // The names are the SDK's, alive as long as it is: copied all the same.
        Ok(dims
            .iter()
            .map(|d| Dimension {
                id: d.id,
                name: text(d.name),
                size: d.instance_size as u64,
            })
            .collect())
    }

    /// How `agent` can sample PCs; an error status where the SDK cannot say (PC sampling
    /// is a beta, off unless `ROCPROFILER_PC_SAMPLING_BETA_ENABLED` is set, and needs the
    /// GPU driver).
    pub fn pc_sampling(&self, agent: Handle) -> Result<Vec<PcSamplingConfiguration>, Status> {
        unsafe extern "C" fn collect(
            configs: *const PcSamplingConfiguration,
            count: usize,
            data: *mut c_void,
        ) -> Status {
            // SAFETY: `data` is the Vec `gathered` passes; the SDK passes `count` configurations.
            unsafe { extend(data, configs, count) };
            abi::status::SUCCESS
        }
        // SAFETY: the callback has the SDK's type.
        gathered(|data| unsafe { (self.pc_sampling)(agent, Some(collect), data) })
    }
}

/// Calls `query` with a `Vec<T>` as its callback's data: what the callback gathered, or
/// the status of a failed call.
fn gathered<T>(query: impl FnOnce(*mut c_void) -> Status) -> Result<Vec<T>, Status> {
    let mut out: Vec<T> = Vec::new();
    let status = query((&mut out as *mut Vec<T>).cast());
    checked(status, out)
}

fn checked<T>(status: Status, value: T) -> Result<T, Status> {
    if status == abi::status::SUCCESS {
        Ok(value)
    } else {
        Err(status)
    }
}
