//! The rocpd schema (version 3, as rocprofiler-sdk's `rocprofiler-sdk-rocpd` defines it):
//! tables named with the database's suffix, so that databases can be attached side by side,
//! plain-named views over them, which everything else queries, and the metadata rows that
//! name the suffix.
//!
//! Two choices differ from rocprofv3's files without changing what a query sees. Every
//! table's `guid` is a virtual generated column: each row has it, no row stores it (it
//! would be a third of the file). Ids are plain integer primary keys: `AUTOINCREMENT` only
//! keeps the ids of deleted rows from coming back, which a file written once never has,
//! and costs a lookup in `sqlite_sequence` per insert.

use super::Guid;
use crate::sqlite::Value;

/// The version of the rocpd schema these tables follow.
pub const SCHEMA_VERSION: &str = "3";

/// The HIP graph node of a dispatch or copy, as rocpd 3.0.2 adds it: 0 and 0 outside any
/// graph.
const GRAPH_EXEC_ID: &str = "graph_exec_id INTEGER NOT NULL DEFAULT 0";
const GRAPH_NODE_ID: &str = "graph_node_id INTEGER NOT NULL DEFAULT 0";

/// A table: its name without the suffix, and its columns after `id` and `guid` (which every
/// table but the metadata has).
pub struct Table {
    pub name: &'static str,
    pub(crate) columns: &'static [&'static str],
    /// Columns holding ids of rows in other tables: (column, table).
    references: &'static [(&'static str, &'static str)],
}

const NID: &str = "nid INTEGER NOT NULL";
const PID: &str = "pid INTEGER NOT NULL";
const EXTDATA: &str = "extdata JSONB NOT NULL DEFAULT '{}'";
const START: &str = "start BIGINT NOT NULL";
const END: &str = "\"end\" BIGINT NOT NULL";

/// What an event's `extdata` holds when there is nothing more to say: its default.
pub(crate) const NO_DATA: Value = Value::Str("{}");

/// Columns rows of a process refer with.
const OF_PROCESS: &[(&str, &str)] = &[("nid", NODE), ("pid", PROCESS)];

pub const METADATA: &str = "rocpd_metadata";
pub const STRING: &str = "rocpd_string";
pub const NODE: &str = "rocpd_info_node";
pub const PROCESS: &str = "rocpd_info_process";
pub const THREAD: &str = "rocpd_info_thread";
pub const AGENT: &str = "rocpd_info_agent";
pub const QUEUE: &str = "rocpd_info_queue";
pub const STREAM: &str = "rocpd_info_stream";
pub const PMC: &str = "rocpd_info_pmc";
pub const CODE_OBJECT: &str = "rocpd_info_code_object";
pub const KERNEL_SYMBOL: &str = "rocpd_info_kernel_symbol";
pub const TRACK: &str = "rocpd_track";
pub const EVENT: &str = "rocpd_event";
pub const ARG: &str = "rocpd_arg";
pub const PMC_EVENT: &str = "rocpd_pmc_event";
pub const REGION: &str = "rocpd_region";
pub const SAMPLE: &str = "rocpd_sample";
pub const KERNEL_DISPATCH: &str = "rocpd_kernel_dispatch";
pub const MEMORY_COPY: &str = "rocpd_memory_copy";
pub const MEMORY_ALLOCATE: &str = "rocpd_memory_allocate";
/// A table of rocpd schema 3.0.2 (rocprofiler-sdk 1.3.5): a HIP graph's launches.
pub const GRAPH_LAUNCH: &str = "rocpd_graph_launch";
/// A table of rocpd schema 3.0.4 (rocprofiler-sdk 1.4.1): `hipEventRecord` and
/// `hipStreamWaitEvent` as the GPU saw them.
pub const HIP_EVENT: &str = "rocpd_hip_event";

/// The category of rocflow's device counter samples, and the start of their tracks'
/// names (rocprofv3 stores none).
pub const DEVICE_COUNTING: &str = "DEVICE_COUNTING";

/// The category of SPM samples, and the start of their tracks' names (`SPM agent 0`).
pub const SPM: &str = "SPM";

/// Every table, each after those it refers to.
pub const TABLES: &[Table] = &[
    Table {
        name: STRING,
        columns: &["string TEXT NOT NULL UNIQUE ON CONFLICT ABORT"],
        references: &[],
    },
    Table {
        name: NODE,
        columns: &[
            "hash BIGINT NOT NULL UNIQUE",
            "machine_id TEXT NOT NULL UNIQUE",
            "system_name TEXT",
            "hostname TEXT",
            "release TEXT",
            "version TEXT",
            "hardware_name TEXT",
            "domain_name TEXT",
        ],
        references: &[],
    },
    Table {
        name: PROCESS,
        columns: &[
            NID,
            "ppid INTEGER",
            PID,
            "init BIGINT",
            "fini BIGINT",
            "start BIGINT",
            "\"end\" BIGINT",
            "command TEXT",
            "environment JSONB NOT NULL DEFAULT '{}'",
            EXTDATA,
        ],
        references: &[("nid", NODE)],
    },
    Table {
        name: THREAD,
        columns: &[
            NID,
            "ppid INTEGER",
            PID,
            "tid INTEGER NOT NULL",
            "name TEXT",
            "start BIGINT",
            "\"end\" BIGINT",
            EXTDATA,
        ],
        references: OF_PROCESS,
    },
    Table {
        name: AGENT,
        columns: &[
            NID,
            PID,
            "type TEXT CHECK (type IN ('CPU', 'GPU'))",
            "absolute_index INTEGER",
            "logical_index INTEGER",
            "type_index INTEGER",
            "uuid INTEGER",
            "name TEXT",
            "model_name TEXT",
            "vendor_name TEXT",
            "product_name TEXT",
            "user_name TEXT",
            EXTDATA,
        ],
        references: OF_PROCESS,
    },
    Table {
        name: QUEUE,
        columns: &[NID, PID, "name TEXT", EXTDATA],
        references: OF_PROCESS,
    },
    Table {
        name: STREAM,
        columns: &[NID, PID, "name TEXT", EXTDATA],
        references: OF_PROCESS,
    },
    Table {
        name: PMC,
        columns: &[
            NID,
            PID,
            "agent_id INTEGER",
            "target_arch TEXT CHECK (target_arch IN ('CPU', 'GPU'))",
            "event_code INT",
            "instance_id INTEGER",
            "name TEXT NOT NULL",
            "symbol TEXT NOT NULL",
            "description TEXT",
            "long_description TEXT DEFAULT ''",
            "component TEXT",
            "units TEXT DEFAULT ''",
            "value_type TEXT CHECK (value_type IN ('ABS', 'ACCUM', 'RELATIVE'))",
            "block TEXT",
            "expression TEXT",
            "is_constant INTEGER",
            "is_derived INTEGER",
            EXTDATA,
        ],
        references: &[("nid", NODE), ("pid", PROCESS), ("agent_id", AGENT)],
    },
    Table {
        name: CODE_OBJECT,
        columns: &[
            NID,
            PID,
            "agent_id INTEGER",
            "uri TEXT",
            "load_base BIGINT",
            "load_size BIGINT",
            "load_delta BIGINT",
            "storage_type TEXT CHECK (storage_type IN ('FILE', 'MEMORY'))",
            EXTDATA,
        ],
        references: &[("nid", NODE), ("pid", PROCESS), ("agent_id", AGENT)],
    },
    Table {
        name: KERNEL_SYMBOL,
        columns: &[
            NID,
            PID,
            "code_object_id INTEGER NOT NULL",
            "kernel_name TEXT",
            "display_name TEXT",
            "kernel_object INTEGER",
            "kernarg_segment_size INTEGER",
            "kernarg_segment_alignment INTEGER",
            "group_segment_size INTEGER",
            "private_segment_size INTEGER",
            "sgpr_count INTEGER",
            "arch_vgpr_count INTEGER",
            "accum_vgpr_count INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("code_object_id", CODE_OBJECT),
        ],
    },
    Table {
        name: TRACK,
        columns: &[
            NID,
            "pid INTEGER",
            "tid INTEGER",
            "name_id INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
        ],
    },
    Table {
        name: EVENT,
        columns: &[
            "category_id INTEGER",
            "stack_id INTEGER",
            "parent_stack_id INTEGER",
            "correlation_id INTEGER",
            "call_stack JSONB NOT NULL DEFAULT '{}'",
            "line_info JSONB NOT NULL DEFAULT '{}'",
            EXTDATA,
        ],
        references: &[("category_id", STRING)],
    },
    Table {
        name: ARG,
        columns: &[
            "event_id INTEGER NOT NULL",
            "position INTEGER NOT NULL",
            "type TEXT NOT NULL",
            "name TEXT NOT NULL",
            "value TEXT",
            EXTDATA,
        ],
        references: &[("event_id", EVENT)],
    },
    Table {
        name: PMC_EVENT,
        columns: &[
            "event_id INTEGER",
            "pmc_id INTEGER NOT NULL",
            "value REAL DEFAULT 0.0",
            "extdata JSONB DEFAULT '{}'",
        ],
        references: &[("pmc_id", PMC), ("event_id", EVENT)],
    },
    Table {
        name: REGION,
        columns: &[
            NID,
            PID,
            "tid INTEGER NOT NULL",
            START,
            END,
            "name_id INTEGER NOT NULL",
            "event_id INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: SAMPLE,
        columns: &[
            "track_id INTEGER NOT NULL",
            "timestamp BIGINT NOT NULL",
            "event_id INTEGER",
            EXTDATA,
        ],
        references: &[("track_id", TRACK), ("event_id", EVENT)],
    },
    Table {
        name: KERNEL_DISPATCH,
        columns: &[
            NID,
            PID,
            "tid INTEGER",
            "agent_id INTEGER NOT NULL",
            "kernel_id INTEGER NOT NULL",
            "dispatch_id INTEGER NOT NULL",
            "queue_id INTEGER NOT NULL",
            "stream_id INTEGER NOT NULL",
            START,
            END,
            "private_segment_size INTEGER",
            "group_segment_size INTEGER",
            "workgroup_size_x INTEGER NOT NULL",
            "workgroup_size_y INTEGER NOT NULL",
            "workgroup_size_z INTEGER NOT NULL",
            "grid_size_x INTEGER NOT NULL",
            "grid_size_y INTEGER NOT NULL",
            "grid_size_z INTEGER NOT NULL",
            // rocpd 3.0.2's, where readers of 3.0.0 pass over them.
            GRAPH_EXEC_ID,
            GRAPH_NODE_ID,
            "region_name_id INTEGER",
            "event_id INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("kernel_id", KERNEL_SYMBOL),
            ("queue_id", QUEUE),
            ("stream_id", STREAM),
            ("region_name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: MEMORY_COPY,
        columns: &[
            NID,
            PID,
            "tid INTEGER",
            START,
            END,
            "name_id INTEGER NOT NULL",
            "dst_agent_id INTEGER",
            "dst_address INTEGER",
            "src_agent_id INTEGER",
            "src_address INTEGER",
            "size INTEGER NOT NULL",
            "queue_id INTEGER",
            "stream_id INTEGER",
            GRAPH_EXEC_ID,
            GRAPH_NODE_ID,
            "region_name_id INTEGER",
            "event_id INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
            ("dst_agent_id", AGENT),
            ("src_agent_id", AGENT),
            ("stream_id", STREAM),
            ("queue_id", QUEUE),
            ("region_name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: MEMORY_ALLOCATE,
        columns: &[
            NID,
            PID,
            "tid INTEGER",
            "agent_id INTEGER",
            "type TEXT CHECK (type IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM'))",
            "level TEXT CHECK (level IN ('REAL', 'VIRTUAL', 'SCRATCH'))",
            START,
            END,
            "address INTEGER",
            "size INTEGER NOT NULL",
            "queue_id INTEGER",
            "stream_id INTEGER",
            "event_id INTEGER",
            EXTDATA,
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("stream_id", STREAM),
            ("queue_id", QUEUE),
            ("event_id", EVENT),
        ],
    },
    // The later revisions' tables of what rocflow records, which AMD's tools of schema
    // 3.0.0 pass over: a reader of rocpd holds them optional.
    Table {
        name: GRAPH_LAUNCH,
        columns: &[
            NID,
            PID,
            "tid INTEGER",
            "agent_id INTEGER",
            "queue_id INTEGER",
            START,
            END,
            "graph_exec_id INTEGER",
            "kernel_dispatch_count INTEGER",
            "event_id INTEGER",
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("queue_id", QUEUE),
            ("event_id", EVENT),
        ],
    },
    // The SDK record's fields: rocflow has no table of AMD's 3.0.4 to follow.
    Table {
        name: HIP_EVENT,
        columns: &[
            NID,
            PID,
            "tid INTEGER",
            "agent_id INTEGER",
            "queue_id INTEGER",
            "source_queue_id INTEGER",
            START,
            END,
            "operation TEXT",
            "hip_event_handle INTEGER",
            "event_id INTEGER",
        ],
        references: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("queue_id", QUEUE),
            ("source_queue_id", QUEUE),
            ("event_id", EVENT),
        ],
    },
];

/// The table named `name`.
pub fn table(name: &str) -> &'static Table {
    TABLES
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no table {name} in the schema"))
}

/// Indexes for the joins the shipped views make on columns other than ids: counters find
/// their dispatch by its event, arguments their event. Each is (table, column, the table
/// whose rows join through it): created once the rows are in, where there are rows to
/// join. An index of every dispatch's event serves counter values alone, and takes a
/// tracing run's database as long to sort as its dispatches took to write.
const INDEXES: &[(&str, &str, &str)] = &[
    (KERNEL_DISPATCH, "event_id", PMC_EVENT),
    (ARG, "event_id", ARG),
];

/// The names of one database's tables: the schema's names with the database's suffix.
pub struct Names {
    guid: Guid,
    suffix: String,
}

impl Names {
    pub fn new(guid: Guid) -> Names {
        Names {
            suffix: guid.suffix(),
            guid,
        }
    }

    /// The quoted name of `table` in this database.
    pub fn table(&self, table: &str) -> String {
        format!("\"{}\"", self.name(table))
    }

    /// The name of `table` in this database.
    pub fn name(&self, table: &str) -> String {
        format!("{table}{}", self.suffix)
    }

    /// An insert of a row of `columns` into `table`, one parameter per value.
    pub fn insert(&self, table: &str, columns: &[&str]) -> String {
        let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
        format!(
            "INSERT INTO {} ({}) VALUES ({})",
            self.table(table),
            names.join(", "),
            vec!["?"; columns.len()].join(", ")
        )
    }

    /// The tables, the metadata rows, and a plain-named view over each table.
    pub fn create(&self) -> String {
        let guid = self.guid;
        let metadata = self.table(METADATA);
        let mut sql = format!(
            "CREATE TABLE {metadata} (id INTEGER NOT NULL PRIMARY KEY, \
             tag TEXT NOT NULL, value TEXT NOT NULL);\n\
             INSERT INTO {metadata} (tag, value) VALUES ('schema_version', '{SCHEMA_VERSION}'), \
             ('uuid', '{}'), ('guid', '{guid}');\n\
             CREATE VIEW {METADATA} AS SELECT * FROM {metadata};\n",
            self.suffix
        );
        for table in TABLES {
            let mut lines = vec![
                "id INTEGER NOT NULL PRIMARY KEY".to_owned(),
                format!("guid TEXT NOT NULL GENERATED ALWAYS AS ('{guid}') VIRTUAL"),
            ];
            lines.extend(table.columns.iter().map(|c| (*c).to_owned()));
            lines.extend(table.references.iter().map(|(column, target)| {
                format!(
                    "FOREIGN KEY ({column}) REFERENCES {} (id) ON UPDATE CASCADE",
                    self.table(target)
                )
            }));
            sql.push_str(&format!(
                "CREATE TABLE {} (\n    {}\n);\nCREATE VIEW {} AS SELECT * FROM {};\n",
                self.table(table.name),
                lines.join(",\n    "),
                table.name,
                self.table(table.name),
            ));
        }
        sql
    }

    /// The indexes of the tables, each with the query that says whether rows join
    /// through it.
    pub fn indexes(&self) -> Vec<(String, String)> {
        INDEXES
            .iter()
            .map(|(table, column, joining)| {
                let create = format!(
                    "CREATE INDEX \"{table}{}_{column}_idx\" ON {} ({column})",
                    self.suffix,
                    self.table(table)
                );
                let used = format!("SELECT EXISTS (SELECT 1 FROM {})", self.table(joining));
                (create, used)
            })
            .collect()
    }
}
