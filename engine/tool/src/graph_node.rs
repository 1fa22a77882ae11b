//! The HIP graph node each kernel dispatch and memory copy ran as, numbered as rocprofv3
//! numbers them (rocprofiler-sdk 1.3.0 on): the SDK calls the tool on the launching thread
//! around each `hipGraphLaunch` (`HIP_GRAPH`'s `EXEC_LAUNCH`), and asks it for each
//! dispatch's and copy's external correlation id as that thread enqueues them. The tool
//! keeps the thread's launches under way as a stack, and answers each request with the
//! launch's executable graph and the next node of it, which the buffered record then
//! carries as its external correlation id. Work enqueued on another thread, or after the
//! launch returned, is outside any graph (0/0), as in rocprofv3.

use std::cell::RefCell;
use std::ffi::c_void;

use rocflow_core::abi::graph_node::{EXEC_LAUNCH, HipGraphData, KIND_NAME};
use rocflow_core::abi::{CallbackTracingRecord, Handle, UserData, callback};

use crate::api::{CallError, MissingSymbol};
use crate::guard::entry;
use crate::state::Tool;

/// Where a dispatch or copy ran in a HIP graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphNode {
    /// The executable graph, as the SDK numbers it (from 1).
    pub exec: u64,
    /// The launch's dispatches and copies, numbered from 0 in enqueue order.
    pub node: u64,
}

/// Marks an external correlation id that carries a graph node. No other external id of
/// rocflow's contexts has it: rocflow pushes none, and no other client holds its contexts.
const CARRIES_NODE: u64 = 1 << 63;
/// The low bits hold the node, the bits above (short of the mark) the executable graph.
const NODE_BITS: u32 = 32;
const EXEC_LIMIT: u64 = 1 << (63 - NODE_BITS);

impl GraphNode {
    /// The external correlation id that carries the node to its buffered record; `None`
    /// where it does not fit (billions of graphs or nodes), left outside any graph.
    pub fn carried(self) -> Option<u64> {
        (self.exec < EXEC_LIMIT && self.node >> NODE_BITS == 0)
            .then_some(CARRIES_NODE | self.exec << NODE_BITS | self.node)
    }

    /// The node a buffered record's external correlation id carries, if it carries one.
    pub fn of_external(external: u64) -> Option<GraphNode> {
        (external & CARRIES_NODE != 0).then_some(GraphNode {
            exec: (external & !CARRIES_NODE) >> NODE_BITS,
            node: external & ((1 << NODE_BITS) - 1),
        })
    }

    /// The executable graph and node as rocpd 3.0.2 stores them: 0/0 outside any graph.
    pub fn columns(node: Option<GraphNode>) -> (u64, u64) {
        node.map_or((0, 0), |n| (n.exec, n.node))
    }
}

/// A graph launch under way on a thread, and the node it last handed out.
#[derive(Debug)]
struct Launch {
    exec: u64,
    /// The last node handed out, to the request kind and contexts that asked for it;
    /// `None` before the first.
    last: Option<Asked>,
}

#[derive(Debug)]
struct Asked {
    node: u64,
    kind: i32,
    contexts: Vec<u64>,
}

impl Launch {
    /// The node of the operation `context` asks about. The SDK asks each context that
    /// requests ids for the kind, one after another, for the same operation: a context
    /// that already took the last node, or a request of another kind, is the next
    /// operation, so an operation two contexts trace takes one node, not two.
    fn node_for(&mut self, context: u64, kind: i32) -> u64 {
        match &mut self.last {
            Some(last) if last.kind == kind && !last.contexts.contains(&context) => {
                last.contexts.push(context);
                last.node
            }
            last => {
                let node = last.as_ref().map_or(0, |l| l.node + 1);
                *last = Some(Asked {
                    node,
                    kind,
                    contexts: vec![context],
                });
                node
            }
        }
    }
}

thread_local! {
    /// The thread's graph launches under way, innermost last.
    static LAUNCHES: RefCell<Vec<Launch>> = const { RefCell::new(Vec::new()) };
}

/// `EXEC_LAUNCH`'s enter on this thread.
fn enter(exec: u64) {
    LAUNCHES.with_borrow_mut(|launches| launches.push(Launch { exec, last: None }));
}

/// `EXEC_LAUNCH`'s exit on this thread.
fn exit() {
    LAUNCHES.with_borrow_mut(|launches| launches.pop());
}

/// The node of the dispatch or copy (request `kind`) `context` asks about on this thread;
/// `None` outside any launch.
pub fn requested(context: u64, kind: i32) -> Option<GraphNode> {
    LAUNCHES.with_borrow_mut(|launches| {
        let launch = launches.last_mut()?;
        Some(GraphNode {
            exec: launch.exec,
            node: launch.node_for(context, kind),
        })
    })
}

/// The `HIP_GRAPH` callback: a launch begins or ends on this thread.
unsafe extern "C" fn on_graph(record: CallbackTracingRecord, _: *mut UserData, _: *mut c_void) {
    entry("graph_node::on_graph", (), || {
        if record.operation != EXEC_LAUNCH {
            return;
        }
        match record.phase {
            callback::PHASE_ENTER => {
                let data = record.payload.cast::<HipGraphData>();
                if data.is_null() {
                    return;
                }
                // SAFETY: the SDK's payload for the kind, valid for the call.
                enter(unsafe { (*data).graph_exec_id.handle });
            }
            callback::PHASE_EXIT => exit(),
            _ => {}
        }
    })
}

/// Why graph nodes cannot be told.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Missing(#[from] MissingSymbol),
    #[error(transparent)]
    Sdk(#[from] CallError),
}

/// Subscribes the never-stopped `control` context to graph launches, where the SDK has
/// them (it lists the `HIP_GRAPH` kind); whether it did, so that the contexts that trace
/// dispatches or copies then ask for their nodes.
pub fn subscribe(tool: &Tool, control: Handle) -> Result<bool, Error> {
    let Some(kind) = crate::callback_kind::find(KIND_NAME)? else {
        return Ok(false);
    };
    let launches = [EXEC_LAUNCH];
    // SAFETY: `launches` outlives the call; the callback has the SDK's signature.
    let status = unsafe {
        (tool.api.configure_callback_tracing)(
            control,
            kind,
            launches.as_ptr(),
            launches.len(),
            Some(on_graph),
            std::ptr::null_mut(),
        )
    };
    tool.api.check("tracing HIP graph launches", status)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocflow_core::abi::graph_node::{REQUEST_KERNEL_DISPATCH, REQUEST_MEMORY_COPY};

    const TRACE: u64 = 0x1001;
    const COUNT: u64 = 0x1002;

    /// Nodes count the launch's dispatches and copies from 0, once each however many
    /// contexts ask, and restart with each launch; nothing outside a launch is a node.
    #[test]
    fn each_operation_of_a_launch_is_one_node() {
        assert_eq!(requested(TRACE, REQUEST_KERNEL_DISPATCH), None);
        enter(7);
        let mut nodes = Vec::new();
        // Two kernels that both contexts ask about, a copy one asks about, a kernel.
        for (context, kind) in [
            (TRACE, REQUEST_KERNEL_DISPATCH),
            (COUNT, REQUEST_KERNEL_DISPATCH),
            (TRACE, REQUEST_KERNEL_DISPATCH),
            (COUNT, REQUEST_KERNEL_DISPATCH),
            (TRACE, REQUEST_MEMORY_COPY),
            (TRACE, REQUEST_KERNEL_DISPATCH),
        ] {
            nodes.push(requested(context, kind).unwrap());
        }
        let node = |node| GraphNode { exec: 7, node };
        assert_eq!(
            nodes,
            [node(0), node(0), node(1), node(1), node(2), node(3)]
        );
        // A launch within the launch numbers its own, and the outer one goes on after.
        enter(9);
        let inner = requested(TRACE, REQUEST_KERNEL_DISPATCH);
        assert_eq!(inner, Some(GraphNode { exec: 9, node: 0 }));
        exit();
        assert_eq!(requested(TRACE, REQUEST_KERNEL_DISPATCH), Some(node(4)));
        exit();
        assert_eq!(requested(TRACE, REQUEST_KERNEL_DISPATCH), None);
        enter(7);
        assert_eq!(requested(COUNT, REQUEST_KERNEL_DISPATCH), Some(node(0)));
        exit();
    }

    #[test]
    fn a_node_travels_in_the_external_correlation_id() {
        for node in [
            GraphNode { exec: 1, node: 0 },
            GraphNode {
                exec: EXEC_LIMIT - 1,
                node: u64::from(u32::MAX),
            },
        ] {
            let carried = node.carried().unwrap();
            assert_eq!(GraphNode::of_external(carried), Some(node));
        }
        // What the SDK leaves where no id was pushed or asked for carries none.
        assert_eq!(GraphNode::of_external(0), None);
        assert_eq!(GraphNode::of_external(12345), None);
        let too_many = GraphNode {
            exec: 1,
            node: 1 << NODE_BITS,
        };
        assert_eq!(too_many.carried(), None);
    }
}
