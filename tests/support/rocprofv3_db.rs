//! rocpd databases as rocprofv3 fills them, for the tests of the rocpd source: AMD's own
//! schema (`rocpd_tables.sql` and the views, from `../shared/data/rocpd`, MIT), tables named
//! with the database's UUID, and rows as rocprofv3's `generateRocpd.cpp` writes them:
//! rows keyed by the OS pid and tid, the agent's node id and the SDK's kernel, code object,
//! queue, stream and counter ids; one string table; an event per record carrying its
//! category, its internal correlation id as `stack_id` and its external one as
//! `correlation_id`; marker messages and agent descriptions as `extdata` JSON; API
//! arguments in `rocpd_arg`; one `rocpd_pmc_event` per counter value of a dispatch.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

/// The directory of AMD's rocpd SQL: `ROCPD_SQL`, else `../shared/data/rocpd` beside the
/// repository.
fn sql_dir() -> PathBuf {
    let dir = std::env::var_os("ROCPD_SQL")
        .map_or_else(|| super::shared().join("data/rocpd"), PathBuf::from);
    assert!(
        dir.join("rocpd_tables.sql").is_file(),
        "AMD's rocpd schema is missing: no {} (set ROCPD_SQL to the directory of rocpd_tables.sql)",
        dir.display()
    );
    dir
}

/// What one process of the fixture holds, for tests to check against.
pub struct Process {
    pub pid: u32,
    pub host: &'static str,
    /// Kernel dispatches, each with one value per counter.
    pub dispatches: u64,
    pub api_calls: u64,
    pub markers: u64,
    pub copies: u64,
    pub allocations: u64,
    pub scratch: u64,
    pub counters: &'static [&'static str],
}

pub const KERNELS: &[(&str, &str)] = &[
    ("_Z6vecAddPfS_S_i", "vecAdd(float*, float*, float*, int)"),
    (
        "_Z4gemmPKfS0_Pfi",
        "gemm(float const*, float const*, float*, int)",
    ),
];

/// The main thread's second thread.
/// The HIP stream (rocprofv3's id of it, its SDK id) of the dispatches of thread `tid`:
/// the worker thread's go on the process's first created stream, the others' on the null
/// stream.
pub fn worker_stream(tid: u32, pid: u32) -> i64 {
    i64::from(tid == worker_tid(pid))
}

pub fn worker_tid(pid: u32) -> u32 {
    pid + 7
}

/// The GPU's counter ids (the SDK's counter handles).
const COUNTER_BASE: i64 = 0x1_0000;

/// What the tables of process `pid`'s database are named with: its UUID, `-` as `_`.
pub fn suffix(pid: u32) -> String {
    format!("_{}", uuid(pid).replace('-', "_"))
}

fn uuid(pid: u32) -> String {
    format!("0191a2b3-c4d5-7e6f-8a9b-{:012x}", u64::from(pid))
}

/// Writes a database for process `pid` on `host` into `path`, with `dispatches` kernel
/// dispatches (and an HIP launch, a copy and a marker range per four of them).
pub fn write(path: &Path, pid: u32, host: &'static str, dispatches: u64) -> Process {
    let dir = sql_dir();
    let (uuid, suffix) = (uuid(pid), suffix(pid));
    let conn = Connection::open(path).unwrap();
    for file in [
        "rocpd_tables.sql",
        "rocpd_views.sql",
        "data_views.sql",
        "marker_views.sql",
        "summary_views.sql",
    ] {
        let sql = std::fs::read_to_string(dir.join(file)).unwrap();
        let sql = sql.replace("{{uuid}}", &suffix).replace("{{guid}}", &uuid);
        conn.execute_batch(&sql)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    let t = |table: &str| format!("`{table}{suffix}`");
    conn.execute_batch("BEGIN").unwrap();
    // rocprofv3 gathers every string first and writes the table before the rows that
    // name them (the schema's foreign keys are on).
    let mut strings: Vec<&str> = vec![
        "",
        "HIP_RUNTIME_API_EXT",
        "hipLaunchKernel",
        "MARKER_CORE_RANGE_API",
        "roctxThreadRangeA",
        "KERNEL_DISPATCH",
        "MEMORY_COPY",
        "MEMORY_COPY_HOST_TO_DEVICE",
        "MEMORY_ALLOCATION",
        "SCRATCH_MEMORY",
    ];
    strings.extend(KERNELS.iter().flat_map(|(m, d)| [*m, *d]));
    for (i, s) in strings.iter().enumerate() {
        conn.execute(
            &format!(
                "INSERT INTO {} (id, string) VALUES (?1, ?2)",
                t("rocpd_string")
            ),
            params![i as i64 + 1, s],
        )
        .unwrap();
    }
    let string = |s: &str| strings.iter().position(|x| *x == s).unwrap() as i64 + 1;
    let nid = 1i64;
    conn.execute(
        &format!("INSERT INTO {} (id, hash, machine_id, system_name, hostname, release, version, hardware_name, domain_name) VALUES (?1, ?2, ?3, 'Linux', ?4, '6.8.0', '#1 SMP', 'x86_64', '')", t("rocpd_info_node")),
        params![nid, 0x5eed_0000i64 + i64::from(pid), format!("machine-{host}"), host],
    )
    .unwrap();
    let environment = serde_json::json!({
        "HOME": "/home/user", "OMPI_COMM_WORLD_RANK": (pid % 100).to_string(),
    });
    conn.execute(
        &format!("INSERT INTO {} (id, nid, ppid, pid, init, fini, start, \"end\", command, environment, extdata) VALUES (?1, ?2, 1, ?1, 1000, 9000000, 1000, 9000000, ?3, ?4, '{{}}')", t("rocpd_info_process")),
        params![pid, nid, "./app --size 1024", environment.to_string()],
    )
    .unwrap();
    for tid in [pid, worker_tid(pid)] {
        conn.execute(
            &format!(
                "INSERT INTO {} (id, nid, ppid, pid, tid) VALUES (?1, ?2, 1, ?3, ?1)",
                t("rocpd_info_thread")
            ),
            params![tid, nid, pid],
        )
        .unwrap();
    }
    // Agents as rocprofiler_agent_v0_t serializes them: the CPU is node 0, the GPU node 1.
    let gpu = serde_json::json!({
        "size": 512, "id": {"handle": 0x7000_0001u64}, "type": 2, "cpu_cores_count": 0,
        "simd_count": 1216, "max_waves_per_simd": 8, "lds_size_in_kb": 64, "num_xcc": 8,
        "wave_front_size": 64, "cu_count": 304, "max_engine_clk_fcompute": 2100,
        "name": "gfx942", "vendor_name": "AMD", "product_name": "AMD Instinct MI300X",
        "model_name": "ip discovery", "node_id": 1, "logical_node_id": 1,
        "logical_node_type_id": 0, "mem_banks": [], "caches": [], "io_links": [],
    });
    let cpu = serde_json::json!({
        "size": 512, "id": {"handle": 0x7000_0000u64}, "type": 1, "cpu_cores_count": 96,
        "simd_count": 0, "cu_count": 96, "name": "AMD EPYC 9454", "node_id": 0,
        "product_name": "AMD EPYC 9454 48-Core Processor", "logical_node_id": 0,
    });
    for (node, kind, info) in [(0, "CPU", &cpu), (1, "GPU", &gpu)] {
        conn.execute(
            &format!("INSERT INTO {} (id, nid, pid, type, absolute_index, logical_index, type_index, uuid, name, model_name, vendor_name, product_name, user_name, extdata) VALUES (?1, ?2, ?3, ?4, ?1, ?1, 0, 0, ?5, '', 'AMD', ?6, ?6, ?7)", t("rocpd_info_agent")),
            params![node, nid, pid, kind, info["name"].as_str(), info["product_name"].as_str(), info.to_string()],
        )
        .unwrap();
    }
    let counters: &[&str] = &["SQ_WAVES", "SQ_INSTS_VALU"];
    for (i, name) in counters.iter().enumerate() {
        conn.execute(
            &format!("INSERT INTO {} (id, nid, pid, agent_id, target_arch, name, symbol, description, component, value_type, block, expression, is_constant, is_derived, extdata) VALUES (?1, ?2, ?3, 1, 'GPU', ?4, ?4, ?5, 'rocm', 'ABS', 'SQ', '', 0, 0, ?6)", t("rocpd_info_pmc")),
            params![COUNTER_BASE + i as i64, nid, pid, name, format!("{name} counted"), gpu.to_string()],
        )
        .unwrap();
    }
    conn.execute(
        &format!("INSERT INTO {} (id, nid, pid, agent_id, uri, load_base, load_size, load_delta, extdata) VALUES (1, ?1, ?2, 1, 'file:///app#offset=0&size=4096', 4096, 65536, 0, '{{}}')", t("rocpd_info_code_object")),
        params![nid, pid],
    )
    .unwrap();
    for (i, (mangled, demangled)) in KERNELS.iter().enumerate() {
        conn.execute(
            &format!("INSERT INTO {} (id, nid, pid, code_object_id, kernel_name, display_name, kernel_object, kernarg_segment_size, kernarg_segment_alignment, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count, extdata) VALUES (?1, ?2, ?3, 1, ?4, ?5, 0, 32, 8, ?6, ?7, 24, ?8, 0, '{{}}')", t("rocpd_info_kernel_symbol")),
            params![i as i64 + 1, nid, pid, mangled, demangled, 1024 * (i as i64 + 1), 16 * i as i64, 32 + 8 * i as i64],
        )
        .unwrap();
    }
    for (id, name) in [(0, "Default Queue"), (0x5a00, "Queue 1")] {
        conn.execute(
            &format!(
                "INSERT INTO {} (id, nid, pid, name) VALUES (?1, ?2, ?3, ?4)",
                t("rocpd_info_queue")
            ),
            params![id, nid, pid, name],
        )
        .unwrap();
    }
    conn.execute(
        &format!(
            "INSERT INTO {} (id, nid, pid, name) VALUES (0, ?1, ?2, 'Default Stream'), (1, ?1, ?2, 'Stream 0')",
            t("rocpd_info_stream")
        ),
        params![nid, pid],
    )
    .unwrap();

    let mut event_id = 0i64;
    let mut event = |category: i64, stack: u64, external: u64, extdata: &str| -> i64 {
        event_id += 1;
        conn.execute(
            &format!("INSERT INTO {} (id, category_id, stack_id, parent_stack_id, correlation_id, extdata) VALUES (?1, ?2, ?3, ?3, ?4, ?5)", t("rocpd_event")),
            params![event_id, category, stack as i64, external as i64, extdata],
        )
        .unwrap();
        event_id
    };
    let (mut api_calls, mut markers, mut copies, mut allocations, mut scratch) = (0, 0, 0, 0, 0);
    let hip = string("HIP_RUNTIME_API_EXT");
    let launch = string("hipLaunchKernel");
    let marker = string("MARKER_CORE_RANGE_API");
    let range = string("roctxThreadRangeA");
    let dispatch_category = string("KERNEL_DISPATCH");
    let copy_category = string("MEMORY_COPY");
    let h2d = string("MEMORY_COPY_HOST_TO_DEVICE");
    let allocation = string("MEMORY_ALLOCATION");
    let scratch_category = string("SCRATCH_MEMORY");
    let empty = string("");
    let mut at = 10_000u64;
    for d in 0..dispatches {
        let correlation = d + 1;
        let kernel = d % 2 + 1;
        let tid = if d % 3 == 0 { worker_tid(pid) } else { pid };
        // The HIP call that launched it, with its arguments.
        if d % 4 == 0 {
            let e = event(hip, correlation, 0, "{}");
            conn.execute(
                &format!("INSERT INTO {} (id, nid, pid, tid, start, \"end\", name_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", t("rocpd_region")),
                params![correlation as i64, nid, pid, tid, at as i64, (at + 500) as i64, launch, e],
            )
            .unwrap();
            for (position, kind, name, value) in [
                (
                    0,
                    "void const*",
                    "function_address",
                    "0x7f0000001000".to_owned(),
                ),
                (1, "dim3", "numBlocks", "{256, 1, 1}".to_owned()),
                (2, "unsigned long", "sharedMemBytes", (64 * d).to_string()),
            ] {
                conn.execute(
                    &format!("INSERT INTO {} (event_id, position, type, name, value) VALUES (?1, ?2, ?3, ?4, ?5)", t("rocpd_arg")),
                    params![e, position, kind, name, value],
                )
                .unwrap();
            }
            api_calls += 1;
        }
        let (start, end) = (at + 1_000, at + 1_000 + 2_000 * kernel);
        let e = event(dispatch_category, correlation, d / 4, "{}");
        conn.execute(
            &format!("INSERT INTO {} (id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, \"end\", private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?1, 23040, ?13, ?6, ?7, ?8, ?9, 256, 1, 1, ?10, 2, 1, ?11, ?12)", t("rocpd_kernel_dispatch")),
            params![(d + 1) as i64, nid, pid, tid, kernel as i64, start as i64, end as i64, 16 * (kernel as i64 - 1), 1024 * kernel as i64, 65536 * kernel as i64, empty, e, worker_stream(tid, pid)],
        )
        .unwrap();
        for i in 0..counters.len() as i64 {
            conn.execute(
                &format!(
                    "INSERT INTO {} (event_id, pmc_id, value) VALUES (?1, ?2, ?3)",
                    t("rocpd_pmc_event")
                ),
                params![e, COUNTER_BASE + i, (d as f64 + 1.0) * (i as f64 + 1.5)],
            )
            .unwrap();
        }
        if d % 4 == 1 {
            let e = event(copy_category, correlation, 0, "{}");
            conn.execute(
                &format!("INSERT INTO {} (nid, pid, tid, start, \"end\", name_id, dst_agent_id, dst_address, src_agent_id, src_address, size, stream_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, 139637976727552, 0, 138538465099776, ?7, 0, ?8)", t("rocpd_memory_copy")),
                params![nid, pid, tid, at as i64, (at + 300) as i64, h2d, (4096 * (d + 1)) as i64, e],
            )
            .unwrap();
            copies += 1;
        }
        if d % 4 == 2 {
            let message = serde_json::json!({ "message": format!("step {}", d / 4) });
            let e = event(marker, 10_000 + correlation, 0, &message.to_string());
            conn.execute(
                &format!("INSERT INTO {} (id, nid, pid, tid, start, \"end\", name_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", t("rocpd_region")),
                params![(10_000 + correlation) as i64, nid, pid, tid, at as i64, (at + 5_000) as i64, range, e],
            )
            .unwrap();
            markers += 1;
        }
        at += 10_000;
    }
    // An allocation, its free and a scratch allocation, each a row of memory_allocate.
    for (category, kind, level, agent, address, size, extdata) in [
        (
            allocation,
            "ALLOC",
            "REAL",
            Some(1),
            0x7f00_0000_0000i64,
            1 << 20,
            "{}",
        ),
        (
            allocation,
            "FREE",
            "REAL",
            None,
            0x7f00_0000_0000i64,
            0,
            "{}",
        ),
        (
            scratch_category,
            "ALLOC",
            "SCRATCH",
            Some(1),
            0,
            1 << 16,
            "{\"flags\":\"SCRATCH_ALLOC_FLAG_NONE\"}",
        ),
    ] {
        let e = event(category, 90_000 + at, 0, "{}");
        conn.execute(
            &format!("INSERT INTO {} (nid, pid, tid, agent_id, type, level, start, \"end\", address, size, queue_id, stream_id, event_id, extdata) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, ?11, ?12)", t("rocpd_memory_allocate")),
            params![nid, pid, pid, agent, kind, level, at as i64, (at + 100) as i64, address, size, e, extdata],
        )
        .unwrap();
        if level == "SCRATCH" {
            scratch += 1;
        } else {
            allocations += 1;
        }
        at += 1_000;
    }
    // A mark: an instant, a sample on its thread's track of its category.
    let e = event(marker, 99_999, 0, "{\"message\":\"checkpoint\"}");
    conn.execute(
        &format!(
            "INSERT INTO {} (id, nid, pid, tid, name_id) VALUES (1, ?1, ?2, ?2, ?3)",
            t("rocpd_track")
        ),
        params![nid, pid, marker],
    )
    .unwrap();
    conn.execute(
        &format!(
            "INSERT INTO {} (id, track_id, timestamp, event_id) VALUES (99999, 1, ?1, ?2)",
            t("rocpd_sample")
        ),
        params![at as i64, e],
    )
    .unwrap();
    markers += 1;
    conn.execute_batch("COMMIT").unwrap();
    Process {
        pid,
        host,
        dispatches,
        api_calls,
        markers,
        copies,
        allocations,
        scratch,
        counters,
    }
}

/// The revisions of rocpd schema 3 after 3.0.0, oldest first, as rocprofiler-sdk 1.3.5 to
/// 1.4.1 write them (from their changelogs and AMD's rocpd schema tests).
pub const REVISIONS: &[&str] = &["3.0.1", "3.0.2", "3.0.3", "3.0.4"];

/// What revising a database to a later revision adds of each kind.
pub const GRAPH_LAUNCHES: u64 = 3;
/// The dispatches a revised database (3.0.2 on) has in a graph; the others have the
/// graph columns' default, 0, as outside any graph.
pub const GRAPH_DISPATCHES: u64 = 3;
pub const SPM_VALUES: u64 = 2;
pub const HIP_EVENTS: u64 = 4;

/// Makes the database of process `pid` at `path` (from [`write`]) one of rocpd schema
/// `version` (one of [`REVISIONS`]): what each revision up to it adds, with rows in what it
/// adds. 3.0.1 allows NIC agents; 3.0.2 attributes dispatches and copies to HIP graph
/// nodes and adds graph launches; 3.0.3 adds SPM values (samples on an `SPM` track, their
/// values in `rocpd_pmc_event` by sample and coordinates); 3.0.4 adds HIP events.
pub fn revise(path: &Path, pid: u32, version: &str) {
    let suffix = suffix(pid);
    let guid = uuid(pid);
    let t = |table: &str| format!("`{table}{suffix}`");
    let at_least = |v: &str| {
        REVISIONS.iter().position(|r| *r == v) <= REVISIONS.iter().position(|r| *r == version)
    };
    assert!(REVISIONS.contains(&version), "{version} is no revision");
    let conn = Connection::open(path).unwrap();
    let mut sql = format!(
        "PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON; \
         UPDATE {} SET value = '{version}' WHERE tag = 'schema_version'; \
         INSERT INTO {} (id, nid, pid, type, absolute_index, logical_index, type_index, name, extdata) \
             VALUES (2, 1, {pid}, 'NIC', 2, 2, 0, 'ionic_0', '{{}}');",
        t("rocpd_metadata"),
        t("rocpd_info_agent"),
    );
    if at_least("3.0.2") {
        sql += &format!(
            "ALTER TABLE {kd} ADD COLUMN graph_exec_id INTEGER NOT NULL DEFAULT 0; \
             ALTER TABLE {kd} ADD COLUMN graph_node_id INTEGER NOT NULL DEFAULT 0; \
             ALTER TABLE {mc} ADD COLUMN graph_exec_id INTEGER NOT NULL DEFAULT 0; \
             ALTER TABLE {mc} ADD COLUMN graph_node_id INTEGER NOT NULL DEFAULT 0; \
             UPDATE {kd} SET graph_exec_id = 1 + id % 3, graph_node_id = id % 2 \
                 WHERE id IN (SELECT id FROM {kd} ORDER BY id LIMIT {GRAPH_DISPATCHES}); \
             CREATE TABLE {gl} (id INTEGER PRIMARY KEY, guid TEXT DEFAULT '{guid}' NOT NULL, \
                 nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER, \
                 queue_id INTEGER, start BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \
                 graph_exec_id INTEGER, kernel_dispatch_count INTEGER, event_id INTEGER);",
            kd = t("rocpd_kernel_dispatch"),
            mc = t("rocpd_memory_copy"),
            gl = t("rocpd_graph_launch"),
        );
        for launch in 1..=GRAPH_LAUNCHES {
            sql += &format!(
                "INSERT INTO {} (id, nid, pid, tid, agent_id, queue_id, start, \"end\", \
                 graph_exec_id, kernel_dispatch_count) VALUES ({launch}, 1, {pid}, {pid}, 1, 0, \
                 {s}, {e}, {launch}, 2);",
                t("rocpd_graph_launch"),
                s = 1000 * launch,
                e = 1000 * launch + 500,
            );
        }
    }
    if at_least("3.0.3") {
        let pmc = t("rocpd_pmc_event");
        sql += &format!(
            "ALTER TABLE {pmc} ADD COLUMN sample_id INTEGER; \
             ALTER TABLE {pmc} ADD COLUMN xcc INTEGER; \
             ALTER TABLE {pmc} ADD COLUMN shader_engine INTEGER; \
             ALTER TABLE {pmc} ADD COLUMN instance INTEGER; \
             INSERT INTO {strings} (id, string) VALUES (9001, 'SPM'); \
             INSERT INTO {track} (id, nid, pid, tid, name_id) VALUES (9001, 1, {pid}, NULL, 9001); \
             INSERT INTO {sample} (id, track_id, timestamp) VALUES (9001, 9001, 5000);",
            strings = t("rocpd_string"),
            track = t("rocpd_track"),
            sample = t("rocpd_sample"),
        );
        for xcc in 0..SPM_VALUES {
            sql += &format!(
                "INSERT INTO {pmc} (pmc_id, value, sample_id, xcc, shader_engine, instance) \
                 VALUES ({COUNTER_BASE}, {v}, 9001, {xcc}, 0, 0);",
                v = 10 * (xcc + 1),
            );
        }
    }
    if at_least("3.0.4") {
        sql += &format!(
            "CREATE TABLE {he} (id INTEGER PRIMARY KEY, guid TEXT DEFAULT '{guid}' NOT NULL, \
                 nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER, \
                 stream_id INTEGER, start BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \
                 operation TEXT, hip_event_handle INTEGER, event_id INTEGER);",
            he = t("rocpd_hip_event"),
        );
        for event in 1..=HIP_EVENTS {
            let operation = if event % 2 == 0 { "WAIT" } else { "RECORD" };
            sql += &format!(
                "INSERT INTO {} (id, nid, pid, tid, agent_id, stream_id, start, \"end\", \
                 operation, hip_event_handle) VALUES ({event}, 1, {pid}, {pid}, 1, 0, {at}, {at}, \
                 '{operation}', {handle});",
                t("rocpd_hip_event"),
                at = 2000 * event,
                handle = 0xe000 + event / 2,
            );
        }
    }
    conn.execute_batch(&sql).unwrap();
}
