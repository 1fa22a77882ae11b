//! The data and summary views AMD ships with the rocpd schema (`kernels`, `regions`,
//! `memory_copies`, `top_kernels`, `kernel_summary`, …), with the same names, columns and
//! meaning, so that rocpd's tools and users' queries work on rocflow's databases. They
//! read the plain-named views, never the suffixed tables, so they work unchanged on one
//! database or on several attached under union views (as rocpd's importer does). Every
//! join matches `guid` as well as the id: ids are only unique within one database.
//!
//! (AMD's marker views file declares no view; markers are regions whose category starts
//! with `MARKER_` and whose event `extdata` holds the message.)

/// The category name of `event`.
fn category(event: &str) -> String {
    format!(
        "(SELECT string FROM rocpd_string RS WHERE RS.id = {event}.category_id \
         AND RS.guid = {event}.guid)"
    )
}

/// The index and type columns of agent `a`, named with `prefix` as the views name them.
fn agent(a: &str, prefix: &str) -> String {
    format!(
        "{a}.absolute_index AS {prefix}_abs_index, {a}.logical_index AS {prefix}_log_index, \
         {a}.type_index AS {prefix}_type_index, {a}.type AS {prefix}_type"
    )
}

/// The columns of event `E` every record view ends with.
const STACK: &str = "E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id";

pub fn data_views() -> String {
    [
        code_objects(),
        kernel_symbols(),
        processes(),
        threads(),
        regions(),
        region_args(),
        kernels(),
        counters(),
        args(),
        memory_copies(),
        memory_allocations(),
        counters_collection(),
    ]
    .concat()
}

fn code_objects() -> String {
    "CREATE VIEW code_objects AS SELECT CO.id, CO.guid, CO.nid, P.pid, \
     A.absolute_index AS agent_abs_index, CO.uri, CO.load_base, CO.load_size, CO.load_delta, \
     CO.storage_type AS storage_type_str, \
     json_extract(CO.extdata, '$.size') AS code_object_size, \
     json_extract(CO.extdata, '$.storage_type') AS storage_type, \
     json_extract(CO.extdata, '$.memory_base') AS memory_base, \
     json_extract(CO.extdata, '$.memory_size') AS memory_size \
     FROM rocpd_info_code_object CO \
     JOIN rocpd_info_agent A ON A.id = CO.agent_id AND A.guid = CO.guid \
     JOIN rocpd_info_process P ON P.id = CO.pid AND P.guid = CO.guid;\n"
        .into()
}

fn kernel_symbols() -> String {
    "CREATE VIEW kernel_symbols AS SELECT KS.id, KS.guid, KS.nid, P.pid, KS.code_object_id, \
     KS.kernel_name, KS.display_name, KS.kernel_object, KS.kernarg_segment_size, \
     KS.kernarg_segment_alignment, KS.group_segment_size, KS.private_segment_size, \
     KS.sgpr_count, KS.arch_vgpr_count, KS.accum_vgpr_count, \
     json_extract(KS.extdata, '$.size') AS kernel_symbol_size, \
     json_extract(KS.extdata, '$.kernel_id') AS kernel_id, \
     json_extract(KS.extdata, '$.kernel_code_entry_byte_offset') AS kernel_code_entry_byte_offset, \
     json_extract(KS.extdata, '$.formatted_kernel_name') AS formatted_kernel_name, \
     json_extract(KS.extdata, '$.demangled_kernel_name') AS demangled_kernel_name, \
     json_extract(KS.extdata, '$.truncated_kernel_name') AS truncated_kernel_name, \
     json_extract(KS.extdata, '$.kernel_address.handle') AS kernel_address \
     FROM rocpd_info_kernel_symbol KS \
     JOIN rocpd_info_process P ON P.id = KS.pid AND P.guid = KS.guid;\n"
        .into()
}

/// The node columns `processes` and `threads` start with.
const NODE: &str = "N.id AS nid, N.machine_id, N.system_name, N.hostname, \
                    N.release AS system_release, N.version AS system_version";

fn processes() -> String {
    format!(
        "CREATE VIEW processes AS SELECT {NODE}, P.guid, P.ppid, P.pid, P.init, P.start, \
         P.\"end\", P.fini, P.command \
         FROM rocpd_info_process P \
         JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid;\n"
    )
}

fn threads() -> String {
    format!(
        "CREATE VIEW threads AS SELECT {NODE}, P.guid, P.ppid, P.pid, T.tid, T.start, \
         T.\"end\", T.name \
         FROM rocpd_info_thread T \
         JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid \
         JOIN rocpd_info_node N ON N.id = T.nid AND N.guid = T.guid;\n"
    )
}

/// `regions`, and `samples` twice: as instants, and shaped as regions of no duration, so
/// that `regions_and_samples` can list both.
fn regions() -> String {
    const TAIL: &str = "E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, E.call_stack, \
         E.line_info";
    format!(
        "CREATE VIEW regions AS SELECT R.id, R.guid, {category} AS category, S.string AS name, \
         R.nid, P.pid, T.tid, R.start, R.\"end\", R.\"end\" - R.start AS duration, R.event_id, \
         {TAIL} \
         FROM rocpd_region R \
         JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid \
         JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid \
         JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid \
         JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid;\n\
         CREATE VIEW samples AS SELECT R.id, R.guid, {category} AS category, {track} AS name, \
         TR.nid, P.pid, T.tid, R.timestamp, R.event_id, {TAIL} {sampled};\n\
         CREATE VIEW sample_regions AS SELECT R.id, R.guid, {category} AS category, \
         {track} AS name, TR.nid, P.pid, T.tid, R.timestamp AS start, R.timestamp AS \"end\", \
         0 AS duration, R.event_id, {TAIL} {sampled};\n\
         CREATE VIEW regions_and_samples AS \
         SELECT * FROM regions UNION ALL SELECT * FROM sample_regions;\n",
        category = category("E"),
        track =
            "(SELECT string FROM rocpd_string RS WHERE RS.id = TR.name_id AND RS.guid = TR.guid)",
        sampled = "FROM rocpd_sample R \
         JOIN rocpd_track TR ON TR.id = R.track_id AND TR.guid = R.guid \
         JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid \
         JOIN rocpd_info_process P ON P.id = TR.pid AND P.guid = TR.guid \
         JOIN rocpd_info_thread T ON T.id = TR.tid AND T.guid = TR.guid",
    )
}

fn region_args() -> String {
    "CREATE VIEW region_args AS SELECT R.id, R.guid, R.nid, P.pid, A.type, A.name, A.value \
     FROM rocpd_region R \
     JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid \
     JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = R.guid \
     JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid;\n"
        .into()
}

fn kernels() -> String {
    format!(
        "CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid, {category} AS category, \
         R.string AS region, S.display_name AS name, K.nid, P.pid, {agent}, \
         S.code_object_id, K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id, \
         Q.name AS queue, ST.name AS stream, K.start, K.\"end\", K.\"end\" - K.start AS duration, \
         K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z, \
         K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, \
         K.workgroup_size_z AS workgroup_z, K.group_segment_size AS lds_size, \
         K.private_segment_size AS scratch_size, S.arch_vgpr_count AS vgpr_count, \
         S.accum_vgpr_count, S.sgpr_count, S.group_segment_size AS static_lds_size, \
         S.private_segment_size AS static_scratch_size, {STACK} \
         FROM rocpd_kernel_dispatch K \
         JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid \
         JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid \
         JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid \
         JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid \
         LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid \
         LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid \
         JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid \
         JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid;\n",
        category = category("E"),
        agent = agent("A", "agent"),
    )
}

/// `pmc_info` and `pmc_events`: counters, and their values per dispatch.
fn counters() -> String {
    format!(
        "CREATE VIEW pmc_info AS SELECT PI.id, PI.guid, PI.nid, P.pid, \
         A.absolute_index AS agent_abs_index, PI.is_constant, PI.is_derived, PI.name, \
         PI.description, PI.block, PI.expression \
         FROM rocpd_info_pmc PI \
         JOIN rocpd_info_agent A ON A.id = PI.agent_id AND A.guid = PI.guid \
         JOIN rocpd_info_process P ON P.id = PI.pid AND P.guid = PI.guid;\n\
         CREATE VIEW pmc_events AS SELECT PE.id, PE.guid, PE.pmc_id, E.id AS event_id, \
         {category} AS category, \
         (SELECT display_name FROM rocpd_info_kernel_symbol KS \
          WHERE KS.id = K.kernel_id AND KS.guid = K.guid) AS name, \
         K.nid, P.pid, K.dispatch_id, K.start, K.\"end\", K.\"end\" - K.start AS duration, \
         PI.name AS counter_name, PE.value AS counter_value \
         FROM rocpd_pmc_event PE \
         JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid \
         JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid \
         JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid \
         JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid;\n",
        category = category("E"),
    )
}

/// `events_args` and `stream_args`: the arguments of API calls.
fn args() -> String {
    format!(
        "CREATE VIEW events_args AS SELECT E.id AS event_id, {category} AS category, \
         E.stack_id, E.parent_stack_id, E.correlation_id, A.position AS arg_position, \
         A.type AS arg_type, A.name AS arg_name, A.value AS arg_value, E.call_stack, \
         E.line_info, A.extdata \
         FROM rocpd_event E JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = E.guid;\n\
         CREATE VIEW stream_args AS SELECT A.id AS argument_id, A.event_id, \
         A.position AS arg_position, A.type AS arg_type, A.value AS arg_value, \
         json_extract(A.extdata, '$.stream_id') AS stream_id, S.nid, P.pid, \
         S.name AS stream_name, S.extdata \
         FROM rocpd_arg A \
         JOIN rocpd_info_stream S ON S.id = json_extract(A.extdata, '$.stream_id') \
         AND S.guid = A.guid \
         JOIN rocpd_info_process P ON P.id = S.pid AND P.guid = S.guid \
         WHERE A.name = 'stream';\n",
        category = category("E"),
    )
}

fn memory_copies() -> String {
    format!(
        "CREATE VIEW memory_copies AS SELECT M.id, M.guid, {category} AS category, M.nid, P.pid, \
         T.tid, M.start, M.\"end\", M.\"end\" - M.start AS duration, S.string AS name, \
         R.string AS region_name, M.stream_id, M.queue_id, ST.name AS stream_name, \
         Q.name AS queue_name, M.size, DST.name AS dst_device, {dst}, M.dst_address, \
         SRC.name AS src_device, {src}, M.src_address, {STACK} \
         FROM rocpd_memory_copy M \
         JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid \
         LEFT JOIN rocpd_string R ON R.id = M.region_name_id AND R.guid = M.guid \
         JOIN rocpd_info_agent DST ON DST.id = M.dst_agent_id AND DST.guid = M.guid \
         JOIN rocpd_info_agent SRC ON SRC.id = M.src_agent_id AND SRC.guid = M.guid \
         LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid \
         LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid \
         JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid \
         JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid \
         JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;\n",
        category = category("E"),
        dst = agent("DST", "dst_agent"),
        src = agent("SRC", "src_agent"),
    )
}

/// `memory_allocations`, and `scratch_memory`: the allocations of scratch level.
fn memory_allocations() -> String {
    const FROM: &str = "FROM rocpd_memory_allocate M \
         LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid \
         LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid \
         LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid \
         JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid \
         JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid \
         JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid";
    format!(
        "CREATE VIEW memory_allocations AS SELECT M.id, M.guid, {category} AS category, M.nid, \
         P.pid, T.tid, M.start, M.\"end\", M.\"end\" - M.start AS duration, M.type, M.level, \
         A.name AS agent_name, {agent}, M.address, M.size, M.queue_id, Q.name AS queue_name, \
         M.stream_id, ST.name AS stream_name, {STACK} {FROM};\n\
         CREATE VIEW scratch_memory AS SELECT M.id, M.guid, M.nid, P.pid, M.type AS operation, \
         A.name AS agent_name, {agent}, M.queue_id, T.tid, \
         json_extract(M.extdata, '$.flags') AS alloc_flags, M.start, M.\"end\", \
         M.\"end\" - M.start AS duration, M.size, M.address, E.correlation_id, {STACK}, \
         {category} AS category, E.extdata AS event_extdata {FROM} \
         WHERE M.level = 'SCRATCH' ORDER BY M.start;\n",
        category = category("E"),
        agent = agent("A", "agent"),
    )
}

/// Counter values summed over their dimension instances, per dispatch and counter.
fn counters_collection() -> String {
    format!(
        "CREATE VIEW counters_collection AS SELECT MIN(PE.id) AS id, PE.guid, K.dispatch_id, \
         K.kernel_id, E.id AS event_id, E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, \
         T.tid, K.agent_id, {agent}, K.queue_id, K.grid_size_x, K.grid_size_y, K.grid_size_z, \
         K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size, S.display_name AS kernel_name, \
         (SELECT string FROM rocpd_string RS WHERE RS.id = K.region_name_id AND RS.guid = K.guid) \
         AS kernel_region, K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z, \
         K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size, \
         K.group_segment_size AS lds_block_size, K.private_segment_size AS scratch_size, \
         S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count, \
         PI.name AS counter_name, PI.symbol AS counter_symbol, PI.component, PI.description, \
         PI.block, PI.expression, PI.value_type, PI.id AS counter_id, SUM(PE.value) AS value, \
         K.start, K.\"end\", PI.is_constant, PI.is_derived, K.\"end\" - K.start AS duration, \
         {category} AS category, K.nid, E.extdata, S.code_object_id \
         FROM rocpd_pmc_event PE \
         JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid \
         JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid \
         JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid \
         JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid \
         JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid \
         JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid \
         JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid \
         GROUP BY PE.guid, K.dispatch_id, PI.name, K.agent_id;\n",
        category = category("E"),
        agent = agent("A", "agent"),
    )
}

/// Spans of GPU work (kernels and copies) with the agent that did them.
const GPU_WORK: &str = "SELECT agent_id, guid, start, \"end\" FROM rocpd_kernel_dispatch \
     UNION ALL SELECT dst_agent_id, guid, start, \"end\" FROM rocpd_memory_copy";

pub fn summary_views() -> String {
    let mut sql = format!(
        "CREATE VIEW top_kernels AS SELECT S.display_name AS name, \
         COUNT(K.kernel_id) AS total_calls, SUM(K.\"end\" - K.start) / 1000.0 AS total_duration, \
         (SUM(K.\"end\" - K.start) / COUNT(K.kernel_id)) / 1000.0 AS average, \
         SUM(K.\"end\" - K.start) * 100.0 \
         / (SELECT SUM(\"end\" - start) FROM rocpd_kernel_dispatch) AS percentage \
         FROM rocpd_kernel_dispatch K \
         JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid \
         GROUP BY name ORDER BY total_duration DESC;\n\
         CREATE VIEW busy AS SELECT W.agent_id, AG.type, W.GpuTime, T.WallTime, \
         W.GpuTime * 1.0 / T.WallTime AS Busy \
         FROM (SELECT agent_id, guid, SUM(\"end\" - start) AS GpuTime FROM ({GPU_WORK}) \
               GROUP BY agent_id, guid) W \
         JOIN (SELECT MAX(\"end\") - MIN(start) AS WallTime FROM ({GPU_WORK})) T \
         JOIN rocpd_info_agent AG ON AG.id = W.agent_id AND AG.guid = W.guid;\n\
         CREATE VIEW top AS SELECT name, COUNT(*) AS total_calls, \
         SUM(duration) / 1000.0 AS total_duration, (SUM(duration) / COUNT(*)) / 1000.0 AS average, \
         SUM(duration) * 100.0 / total_time AS percentage \
         FROM (SELECT S.display_name AS name, K.\"end\" - K.start AS duration \
               FROM rocpd_kernel_dispatch K \
               JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid \
               UNION ALL SELECT S.string, M.\"end\" - M.start FROM rocpd_memory_copy M \
               JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid \
               UNION ALL SELECT S.string, R.\"end\" - R.start FROM rocpd_region R \
               JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid) \
         CROSS JOIN (SELECT SUM(\"end\" - start) AS total_time FROM \
               (SELECT start, \"end\" FROM rocpd_kernel_dispatch \
                UNION ALL SELECT start, \"end\" FROM rocpd_memory_copy \
                UNION ALL SELECT start, \"end\" FROM rocpd_region)) \
         GROUP BY name ORDER BY total_duration DESC;\n"
    );
    for (view, source, key, prefix) in [
        ("kernel_summary", "kernels", "name", ""),
        ("kernel_summary_region", "kernels", "region", ""),
        ("memory_copy_summary", "memory_copies", "name", ""),
        (
            "memory_allocation_summary",
            "memory_allocations",
            "type",
            "MEMORY_ALLOCATION_",
        ),
    ] {
        sql.push_str(&summary(view, source, key, prefix));
    }
    sql
}

/// A summary of the durations in view `source` grouped by its column `key`: calls, total,
/// sum of squares, mean, share of the total, extremes, sample variance and deviation.
fn summary(view: &str, source: &str, key: &str, prefix: &str) -> String {
    let deviation = "CAST(D.duration - G.mean AS REAL)";
    format!(
        "CREATE VIEW {view} AS WITH \
         groups AS (SELECT {key} AS name, AVG(duration) AS mean FROM {source} GROUP BY {key}), \
         stats AS (SELECT G.name, COUNT(*) AS calls, SUM(D.duration) AS total, \
                   SUM(CAST(D.duration AS REAL) * CAST(D.duration AS REAL)) AS squares, \
                   G.mean, MIN(D.duration) AS least, MAX(D.duration) AS most, \
                   SUM({deviation} * {deviation}) / (COUNT(*) - 1) AS variance \
                   FROM {source} D JOIN groups G ON D.{key} = G.name GROUP BY G.name), \
         overall AS (SELECT SUM(total) AS total FROM stats) \
         SELECT '{prefix}' || S.name AS name, S.calls, S.total AS \"DURATION (nsec)\", \
         S.squares AS \"SQR (nsec)\", S.mean AS \"AVERAGE (nsec)\", \
         CAST(S.total AS REAL) / O.total * 100 AS \"PERCENT (INC)\", S.least AS \"MIN (nsec)\", \
         S.most AS \"MAX (nsec)\", S.variance AS \"VARIANCE\", SQRT(S.variance) AS \"STD_DEV\" \
         FROM stats S CROSS JOIN overall O;\n"
    )
}
