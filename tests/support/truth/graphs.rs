//! The truth of HIP graphs and HIP events. Each thread instantiates the scenario's graphs
//! in the order their first nodes are listed, the SDK numbering them from 1 across the
//! process; an iteration launches each once, its nodes' dispatches sharing the launch's
//! correlation id, in the order listed. A `[[call]]` graph launch launches no kernels, of an
//! executable graph numbered after every thread's graphs of kernels. A HIP event `RECORD`
//! barrier waits on its own queue, a `WAIT` on another. A launch's dispatches are its
//! graph's nodes, numbered from 0 in the order listed under the launch's executable graph
//! (rocprofv3's numbering, which the tool does on the launching thread); every other
//! dispatch is in no graph, 0/0.

use std::collections::BTreeMap;

use super::{Kernel, Rows, Scenario};

/// Per executable graph: its launches and the dispatches each enqueues.
type Launches = BTreeMap<u64, (u64, u64)>;

/// A dispatch of a launch: its id, kernel, agent, executable graph and node.
type Node<'a> = (u64, &'a str, u64, u64, u64);

impl Scenario {
    /// The scenario's graphs, each once, in the order their first nodes are listed.
    pub fn graphs(&self) -> Vec<u64> {
        let mut graphs = Vec::new();
        for graph in self.kernels.iter().filter_map(|k| k.graph) {
            if !graphs.contains(&graph) {
                graphs.push(graph);
            }
        }
        graphs
    }

    fn nodes(&self, graph: u64) -> Vec<&Kernel> {
        (self.kernels.iter())
            .filter(|k| k.graph == Some(graph))
            .collect()
    }

    /// `[[call]]`s of `domain` and `function`, per iteration.
    fn calls_of(&self, domain: &str, function: &str) -> u64 {
        (self.calls.iter())
            .filter(|c| c.0 == domain && c.1 == function)
            .map(|c| c.2)
            .sum()
    }

    /// The launches each process makes.
    fn launches(&self) -> Launches {
        let graphs = self.graphs();
        let width = graphs.len() as u64;
        let standalone = self.calls_of("hip_graph", "EXEC_LAUNCH");
        let mut launches = Launches::new();
        for thread in 0..self.threads {
            for (place, &graph) in graphs.iter().enumerate() {
                let nodes = self.nodes(graph).len() as u64;
                launches.insert(1 + thread * width + place as u64, (self.iterations, nodes));
            }
            if standalone > 0 {
                let exec = 1 + self.threads * width + thread;
                launches.insert(exec, (self.iterations * standalone, 0));
            }
        }
        launches
    }

    /// What is wrong with the `graph_launch`, `kernel_dispatch` and `hip_event_barrier`
    /// tables (rocflow's CSV) of a run of `processes` processes: every launch, the
    /// dispatches it enqueued, and every barrier, against the scenario.
    pub fn graph_misfits(
        &self,
        processes: u64,
        launches: &Rows,
        dispatches: &Rows,
        barriers: &Rows,
    ) -> Vec<String> {
        let mut wrong = Vec::new();
        let int =
            |row: &BTreeMap<String, String>, column: &str| -> u64 { row[column].parse().unwrap() };
        // Per process, the launches of each executable graph.
        let mut seen: BTreeMap<u64, Launches> = BTreeMap::new();
        for launch in launches {
            let exec = seen.entry(int(launch, "pid")).or_default();
            let entry = exec.entry(int(launch, "graph_exec_id")).or_default();
            entry.0 += 1;
            if entry.0 > 1 && entry.1 != int(launch, "dispatch_count") {
                wrong.push(format!(
                    "graph launches of one graph count dispatches unlike: {launch:?}"
                ));
            }
            entry.1 = int(launch, "dispatch_count");
        }
        let want = self.launches();
        if seen.len() as u64 != processes || seen.values().any(|s| *s != want) {
            wrong.push(format!(
                "graph launches per process {seen:?}, want {want:?} in each of {processes}"
            ));
        }
        // Each launch's dispatches: its graph's nodes, in order, on its GPU.
        // Per process and correlation id.
        let mut enqueued: BTreeMap<(u64, u64), Vec<Node>> = BTreeMap::new();
        for d in dispatches {
            let key = (int(d, "pid"), int(d, "correlation_id"));
            let node = (
                int(d, "dispatch_id"),
                d["kernel_name"].as_str(),
                int(d, "agent"),
                int(d, "graph_exec_id"),
                int(d, "graph_node_id"),
            );
            enqueued.entry(key).or_default().push(node);
        }
        let graphs = self.graphs();
        let mut attributed = 0;
        for launch in launches.iter().filter(|l| int(l, "dispatch_count") > 0) {
            let key = (int(launch, "pid"), int(launch, "correlation_id"));
            let mut nodes = enqueued.get(&key).cloned().unwrap_or_default();
            nodes.sort_unstable();
            let graph = graphs[((int(launch, "graph_exec_id") - 1) % graphs.len() as u64) as usize];
            let want: Vec<&str> = self.nodes(graph).iter().map(|k| k.name.as_str()).collect();
            let names: Vec<&str> = nodes.iter().map(|n| n.1).collect();
            // The i-th dispatch (in enqueue order) is the graph's node i.
            let exec = int(launch, "graph_exec_id");
            let placed: Vec<(u64, u64)> = nodes.iter().map(|n| (n.3, n.4)).collect();
            let numbered: Vec<(u64, u64)> = (0..nodes.len() as u64).map(|i| (exec, i)).collect();
            if placed != numbered {
                wrong.push(format!(
                    "graph launch {launch:?}: its dispatches are graph nodes {placed:?}, want {numbered:?}"
                ));
            }
            if names != want || nodes.iter().any(|n| n.2 != int(launch, "agent")) {
                wrong.push(format!(
                    "graph launch {launch:?} enqueued {nodes:?}, want {want:?} on its agent"
                ));
            }
            attributed += nodes.len() as u64;
        }
        let in_graph = |d: &&BTreeMap<String, String>| {
            (self.kernels.iter()).any(|k| k.graph.is_some() && k.name == d["kernel_name"])
        };
        let in_graphs = dispatches.iter().filter(in_graph).count() as u64;
        let outside = dispatches.iter().filter(|d| !in_graph(d));
        for d in outside.filter(|d| (int(d, "graph_exec_id"), int(d, "graph_node_id")) != (0, 0)) {
            wrong.push(format!("dispatch {d:?} of no graph has a graph node"));
        }
        if attributed != in_graphs {
            wrong.push(format!(
                "{in_graphs} dispatches of graph nodes, {attributed} of them a launch's"
            ));
        }
        // Barriers: as many of each operation as the scenario calls, each on a queue.
        let mut operations: BTreeMap<String, u64> = BTreeMap::new();
        for barrier in barriers {
            let operation = barrier["operation"].clone();
            let (queue, source) = (int(barrier, "queue"), int(barrier, "source_queue"));
            let waits = operation == "WAIT";
            if queue == 0 || int(barrier, "event") == 0 || (queue != source) != waits {
                wrong.push(format!("HIP event barrier {barrier:?}: want a queue, an event, and another queue as the source of a WAIT only"));
            }
            *operations.entry(operation).or_default() += 1;
        }
        let n = processes * self.threads * self.iterations;
        let want: BTreeMap<String, u64> = ["RECORD", "WAIT"]
            .into_iter()
            .map(|op| (op.to_owned(), n * self.calls_of("hip_event", op)))
            .filter(|(_, count)| *count > 0)
            .collect();
        if operations != want {
            wrong.push(format!("HIP event barriers {operations:?}, want {want:?}"));
        }
        wrong
    }
}

/// What rocflow's Perfetto traces show of HIP graphs and events: the graph executable and
/// dispatch count of each slice on an agent's "HIP graph launches" track (or its lanes),
/// and per HIP event operation, the slices on the queues' "HIP event barriers" tracks.
pub fn perfetto(files: &[std::path::PathBuf]) -> (Vec<(u64, u64)>, BTreeMap<String, u64>) {
    let mut launches = Vec::new();
    let mut barriers = BTreeMap::new();
    for file in crate::decode_perfetto(files) {
        let tracks = file["tracks"].as_object().unwrap();
        let named = |event: &serde_json::Value| {
            let track = &tracks[&event["track"].to_string()];
            track["name"].as_str().unwrap_or_default().to_owned()
        };
        let begun = (file["events"].as_array().unwrap().iter()).filter(|e| e["type"] == "B");
        for event in begun {
            let track = named(event);
            let arg = |name: &str| event["args"][name].as_u64().unwrap();
            // Overlapping slices spill onto lanes: `…, lane 2` and on.
            if track.starts_with("HIP graph launches") {
                launches.push((arg("graph_exec_id"), arg("dispatch_count")));
            } else if track.contains("HIP event barriers") {
                let name = event["name"].as_str().unwrap();
                let operation = name.trim_start_matches("hip event ").to_owned();
                *barriers.entry(operation).or_default() += 1;
            }
        }
    }
    launches.sort_unstable();
    (launches, barriers)
}

/// The summary's `hip_graphs` table (`summary.json`): per executable graph, its launches
/// and the dispatches they enqueued.
pub fn summary(json: &std::path::Path) -> BTreeMap<u64, (u64, u64)> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let rows = doc["hip_graphs"].as_array().cloned().unwrap_or_default();
    let int = |v: &serde_json::Value| v.as_f64().unwrap() as u64;
    let mut graphs = BTreeMap::new();
    for row in rows {
        let graph = row["graph"].as_str().unwrap();
        let exec = graph.trim_start_matches("graph ").parse().unwrap();
        graphs.insert(exec, (int(&row["calls"]), int(&row["dispatches"])));
    }
    graphs
}

/// A dispatch in a graph as an output shows it: its id, executable graph and node, in
/// order.
pub type Placed = Vec<(u64, u64, u64)>;

/// The dispatches in a graph of rocflow's CSV or Parquet `kernel_dispatch` rows.
pub fn placed(dispatches: &Rows) -> Placed {
    let int = |row: &BTreeMap<String, String>, column: &str| -> u64 {
        row[column].parse::<f64>().unwrap() as u64
    };
    let mut placed: Placed = (dispatches.iter())
        .map(|d| {
            let id = int(d, "dispatch_id");
            (id, int(d, "graph_exec_id"), int(d, "graph_node_id"))
        })
        .filter(|d| d.1 != 0)
        .collect();
    placed.sort_unstable();
    placed
}

/// The dispatches in a graph of rocflow's Parquet `kernel_dispatch` dataset in `dir`.
pub fn placed_in_parquet(dir: &std::path::Path) -> Placed {
    let query = "SELECT dispatch_id, graph_exec_id, graph_node_id \
                 FROM read_parquet('kernel_dispatch/**/*.parquet') WHERE graph_exec_id <> 0";
    let rows = crate::duckdb(dir, &[query]);
    let int = |v: &serde_json::Value| v.as_u64().unwrap();
    let mut placed: Placed = (rows[0].iter())
        .map(|r| (int(&r[0]), int(&r[1]), int(&r[2])))
        .collect();
    placed.sort_unstable();
    placed
}

/// The dispatches in a graph of a rocpd database, from rocpd 3.0.2's columns.
pub fn placed_in_rocpd(db: &std::path::Path) -> Placed {
    let db = rusqlite::Connection::open(db).unwrap();
    let mut placed: Placed = crate::sqlite_rows(
        &db,
        "SELECT dispatch_id, graph_exec_id, graph_node_id FROM rocpd_kernel_dispatch \
         WHERE graph_exec_id <> 0",
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64)),
    );
    placed.sort_unstable();
    placed
}

/// The dispatches in a graph of rocflow's Perfetto traces: the kernel slices whose args
/// name a graph node.
pub fn placed_in_perfetto(files: &[std::path::PathBuf]) -> Placed {
    let mut placed = Placed::new();
    for file in crate::decode_perfetto(files) {
        let begun = (file["events"].as_array().unwrap().iter()).filter(|e| e["type"] == "B");
        for event in begun {
            let args = &event["args"];
            if let (Some(id), Some(exec)) = (args["dispatch_id"].as_u64(), args["graph_exec_id"].as_u64()) {
                let node = args["graph_node_id"].as_u64().unwrap();
                placed.push((id, exec, node));
            }
        }
    }
    placed.sort_unstable();
    placed
}
