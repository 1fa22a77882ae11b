//! Decoded traces as tables: one row per instruction of each traced dispatch or device
//! trace window (how many times its waves ran it, for how long, how much of that stalled)
//! and one per wave, in Parquet files of the thread-trace folder. A row of a dispatch has
//! its `dispatch_id` and no `device_window`, one of a device trace the reverse.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt8Array, UInt32Array,
    UInt64Array,
};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use rocflow_core::sim_trace;
use rocflow_core::thread_trace::Traced;

use super::decode::DecodedWave;
use super::keep::Kept;
use crate::catalog::Catalog;

/// The instructions file's name.
pub const INSTRUCTIONS: &str = "thread_trace_instructions.parquet";
/// The waves file's name.
pub const WAVES: &str = "thread_trace_waves.parquet";

/// One instruction of one traced dispatch or window, over all its traced waves.
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionRow {
    pub pid: u32,
    pub traced: Traced,
    pub code_object: u64,
    pub address: u64,
    /// Its disassembly, where the code object is one rocflow reads (the simulated
    /// device's); empty otherwise.
    pub text: String,
    pub hits: u64,
    pub total_latency: u64,
    pub stall: u64,
}

impl InstructionRow {
    pub fn mean_latency(&self) -> f64 {
        self.total_latency as f64 / self.hits.max(1) as f64
    }
}

/// The instruction rows of `waves`, by dispatch and address.
pub fn instructions(waves: &[DecodedWave], kept: &Kept, catalog: &Catalog) -> Vec<InstructionRow> {
    let texts = texts(kept);
    let mut rows: BTreeMap<(u16, Traced, u64, u64), InstructionRow> = BTreeMap::new();
    for wave in waves {
        for i in &wave.instructions {
            let key = (wave.stream, wave.traced, i.code_object, i.address);
            let row = rows.entry(key).or_insert_with(|| InstructionRow {
                pid: pid(catalog, wave.stream),
                traced: wave.traced,
                code_object: i.code_object,
                address: i.address,
                text: (texts.get(&(wave.stream, i.code_object, i.address)))
                    .cloned()
                    .unwrap_or_default(),
                hits: 0,
                total_latency: 0,
                stall: 0,
            });
            row.hits += 1;
            row.total_latency += i.duration.max(0) as u64;
            row.stall += u64::from(i.stall);
        }
    }
    rows.into_values().collect()
}

fn pid(catalog: &Catalog, stream: u16) -> u32 {
    catalog.stream(stream).process.as_ref().map_or(0, |p| p.pid)
}

/// Instruction texts by stream, code object and offset, from the code objects rocflow
/// reads.
fn texts(kept: &Kept) -> HashMap<(u16, u64, u64), String> {
    let mut texts = HashMap::new();
    for code in &kept.code_objects {
        let Ok(bytes) = std::fs::read(&code.path) else {
            continue;
        };
        for (offset, _, text) in sim_trace::read_code_object(&bytes).unwrap_or_default() {
            texts.insert((code.stream, code.id, offset), text);
        }
    }
    texts
}

/// Writes both tables into `dir`; gives the files written.
pub fn write(
    dir: &Path,
    rows: &[InstructionRow],
    waves: &[DecodedWave],
    catalog: &Catalog,
) -> Result<Vec<PathBuf>, parquet::errors::ParquetError> {
    std::fs::create_dir_all(dir)?;
    let u64s = |f: &dyn Fn(&InstructionRow) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    let instructions = batch(vec![
        (
            "pid",
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.pid))),
        ),
        (
            "dispatch_id",
            optional(rows.iter().map(|r| r.traced.dispatch_id())),
        ),
        (
            "device_window",
            optional(rows.iter().map(|r| r.traced.window())),
        ),
        ("code_object_id", u64s(&|r| r.code_object)),
        ("address", u64s(&|r| r.address)),
        (
            "instruction",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.text.as_str()),
            )) as ArrayRef,
        ),
        ("hits", u64s(&|r| r.hits)),
        ("total_latency_cycles", u64s(&|r| r.total_latency)),
        (
            "mean_latency_cycles",
            Arc::new(Float64Array::from_iter_values(
                rows.iter().map(InstructionRow::mean_latency),
            )),
        ),
        ("stall_cycles", u64s(&|r| r.stall)),
    ])?;
    let u8s = |f: &dyn Fn(&DecodedWave) -> u8| -> ArrayRef {
        Arc::new(UInt8Array::from_iter_values(waves.iter().map(f)))
    };
    let i64s = |f: &dyn Fn(&DecodedWave) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(waves.iter().map(f)))
    };
    let waves_table = batch(vec![
        (
            "pid",
            Arc::new(UInt32Array::from_iter_values(
                waves.iter().map(|w| pid(catalog, w.stream)),
            )),
        ),
        (
            "dispatch_id",
            optional(waves.iter().map(|w| w.traced.dispatch_id())),
        ),
        (
            "device_window",
            optional(waves.iter().map(|w| w.traced.window())),
        ),
        (
            "agent",
            Arc::new(UInt32Array::from_iter_values(waves.iter().map(|w| w.agent))),
        ),
        (
            "shader_engine",
            Arc::new(UInt32Array::from_iter_values(
                waves.iter().map(|w| w.shader_engine),
            )),
        ),
        ("cu", u8s(&|w| w.cu)),
        ("simd", u8s(&|w| w.simd)),
        ("wave_slot", u8s(&|w| w.slot)),
        ("begin_cycle", i64s(&|w| w.begin)),
        ("end_cycle", i64s(&|w| w.end)),
        (
            "instructions",
            Arc::new(UInt64Array::from_iter_values(
                waves.iter().map(|w| w.instructions.len() as u64),
            )),
        ),
    ])?;
    let mut written = Vec::new();
    for (name, table) in [(INSTRUCTIONS, instructions), (WAVES, waves_table)] {
        let path = dir.join(name);
        // Written beside its name and renamed once whole: a failure leaves no part-table.
        let staged = tempfile::NamedTempFile::new_in(dir)?;
        let mut writer = ArrowWriter::try_new(staged.as_file().try_clone()?, table.schema(), None)?;
        writer.write(&table)?;
        writer.close()?;
        staged.persist(&path).map_err(|e| e.error)?;
        written.push(path);
    }
    Ok(written)
}

/// Reads back the instruction rows of a run's table.
pub fn read_instructions(
    path: &Path,
) -> Result<Vec<InstructionRow>, parquet::errors::ParquetError> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{UInt32Type, UInt64Type};
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?
            .build()?;
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| parquet::errors::ParquetError::General(e.to_string()))?;
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                parquet::errors::ParquetError::General(format!(
                    "{} has no column `{name}`",
                    path.display()
                ))
            })
        };
        let (pid, text) = (column("pid")?, column("instruction")?);
        let (pid, text) = (
            pid.as_primitive_opt::<UInt32Type>(),
            text.as_string_opt::<i32>(),
        );
        let u64s = |name: &str| -> Result<Vec<u64>, parquet::errors::ParquetError> {
            let array = column(name)?;
            array
                .as_primitive_opt::<UInt64Type>()
                .map(|a| a.values().to_vec())
                .ok_or_else(|| {
                    parquet::errors::ParquetError::General(format!("`{name}` is not a u64 column"))
                })
        };
        let (Some(pid), Some(text)) = (pid, text) else {
            return Err(parquet::errors::ParquetError::General(format!(
                "{} is not rocflow's instruction table",
                path.display()
            )));
        };
        let optional = |name: &str| {
            (column(name)?.as_primitive_opt::<UInt64Type>()).ok_or_else(|| {
                parquet::errors::ParquetError::General(format!("`{name}` is not a u64 column"))
            })
        };
        let (dispatch, window) = (optional("dispatch_id")?, optional("device_window")?);
        let (code, address) = (u64s("code_object_id")?, u64s("address")?);
        let (hits, latency, stall) = (
            u64s("hits")?,
            u64s("total_latency_cycles")?,
            u64s("stall_cycles")?,
        );
        for r in 0..batch.num_rows() {
            rows.push(InstructionRow {
                pid: pid.value(r),
                traced: match (dispatch.is_valid(r), window.is_valid(r)) {
                    (true, false) => Traced::Dispatch(dispatch.value(r)),
                    (false, true) => Traced::Device {
                        window: window.value(r),
                    },
                    _ => {
                        return Err(parquet::errors::ParquetError::General(format!(
                            "row {r} of {} has both or neither of a dispatch and a device window",
                            path.display()
                        )));
                    }
                },
                code_object: code[r],
                address: address[r],
                text: if text.is_null(r) {
                    String::new()
                } else {
                    text.value(r).to_owned()
                },
                hits: hits[r],
                total_latency: latency[r],
                stall: stall[r],
            });
        }
    }
    Ok(rows)
}

/// A column of a dispatch's or a window's number, null where the row is of the other.
fn optional(values: impl Iterator<Item = Option<u64>>) -> ArrayRef {
    Arc::new(values.collect::<UInt64Array>())
}

/// The columns that are null in some rows: a row is of a dispatch or of a window.
const NULLABLE: &[&str] = &["dispatch_id", "device_window"];

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, parquet::errors::ParquetError> {
    let fields: Vec<Field> = (columns.iter())
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), NULLABLE.contains(name)))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| parquet::errors::ParquetError::General(e.to_string()))
}
