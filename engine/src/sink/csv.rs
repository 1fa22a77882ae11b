//! The CSV sink: a directory with one file per record kind (the record's columns, then the
//! columns `derive` transforms added) and one per aggregate table. API calls have one more
//! column before the added ones, `args`: the call's arguments as `name=value` pairs joined
//! by `;` (empty where none were collected).
//!
//! Files are written into a [`Staging`] directory and moved into place when the run ends,
//! so a failed run leaves no half-written output where the final one would be.
//!
//! With `flavour = "rocprofv3"` the sink writes rocprofv3's files instead ([`rocprofv3`]).

pub mod rocprofv3;

use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::{BatchVisitor, Cell, Columns, visit};
use crate::record::RecordKind;
use crate::table::Table;

use super::staging::Staging;
use super::{Sink, SinkError};
use crate::writeback::Behind;

pub struct CsvSink {
    staging: Staging,
    files: HashMap<RecordKind, Behind>,
    written: Vec<PathBuf>,
    /// The previous window's text, written while the next one is formatted.
    pending: Vec<Text>,
    /// Texts free for reuse (see [`Text::recycle`]).
    spare: Vec<Text>,
}

/// Rows formatted by one task: large enough that a task outweighs its scheduling, small
/// enough that a window splits over every core and a block's text stays in the core's
/// cache. On 16 cores, 20 M `trace-all` records, six rounds on two machines in turns:
/// 1,024 rows took less CPU than 4,096 in every round (CSV alone 8.1-11.3 s against
/// 9.5-13.4, all five sinks 37.9-51.6 against 40.9-53.9) and all five ran faster in
/// every round (4.21-5.60 M records/s against 4.02-5.33); CSV alone was level (12.7-15.8
/// against 12.6-16.5).
const ROWS_PER_BLOCK: usize = 1024;

/// The CSV text of one block of rows.
#[derive(Default)]
struct Text {
    kind: Option<RecordKind>,
    bytes: Vec<u8>,
}

/// The rows of one block.
struct Block<'a> {
    chunk: &'a Chunk,
    meta: &'a StreamMeta,
    rows: Range<usize>,
    text: &'a mut Text,
}

impl BatchVisitor for Block<'_> {
    type Output = ();

    fn visit<R: Columns>(self, records: &[R]) {
        let Block {
            chunk,
            meta,
            rows,
            text,
        } = self;
        text.kind = Some(R::KIND);
        text.bytes.clear();
        for (i, record) in records[rows.clone()].iter().enumerate() {
            let mut first = true;
            record.for_each_cell(meta, |cell| {
                if !first {
                    text.bytes.push(b',');
                }
                first = false;
                text.field(cell);
            });
            if R::KIND == RecordKind::Api {
                text.bytes.push(b',');
                text.args(chunk, rows.start + i, meta);
            }
            for extra in &chunk.extra {
                text.bytes.push(b',');
                text.value(&extra.values[rows.start + i]);
            }
            text.bytes.push(b'\n');
            if i == 0 {
                // Room for the block, judged by its first row: growing a block's text by
                // doubling copied it several times over, into memory touched afresh.
                text.bytes.reserve(text.bytes.len() * (rows.len() - 1));
            }
        }
    }
}

impl Text {
    /// A value of an added column or an aggregate table.
    fn value(&mut self, value: &evalexpr::Value) {
        match value {
            evalexpr::Value::String(s) => quote(s, &mut self.bytes),
            evalexpr::Value::Int(v) => self.field(Cell::Int(*v)),
            evalexpr::Value::Float(v) => self.field(Cell::Float(*v)),
            evalexpr::Value::Empty => {}
            other => quote(&other.to_string(), &mut self.bytes),
        }
    }

    /// The `args` field of API call `i` of `chunk`.
    fn args(&mut self, chunk: &Chunk, i: usize, meta: &StreamMeta) {
        let Some(args) = chunk.args(i, meta) else {
            return;
        };
        let pairs: Vec<String> = args.map(|a| format!("{}={}", a.name, a.value)).collect();
        quote(&pairs.join(";"), &mut self.bytes);
    }

    fn field(&mut self, cell: Cell<'_>) {
        match cell {
            Cell::Int(v) => push_int(&mut self.bytes, v),
            // Counter values are mostly whole numbers: print them as integers.
            Cell::Float(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => {
                push_int(&mut self.bytes, v as i64)
            }
            Cell::Float(v) => self
                .bytes
                .extend_from_slice(ryu::Buffer::new().format(v).as_bytes()),
            Cell::Str(s) => quote(s, &mut self.bytes),
        }
    }

    /// The text emptied for another block, its buffer kept only if the block filled at
    /// least half of it: a buffer kept whole grew to the largest block it ever held, so
    /// that over a run every buffer came to hold an API block's text (20 M records
    /// peaked 26 % above 2 M).
    fn recycle(mut self) -> Text {
        if self.bytes.len() < self.bytes.capacity() / 2 {
            self.bytes = Vec::new();
        }
        self.bytes.clear();
        self
    }
}

/// Writes each text to its kind's file, in order: the files in parallel, since the kernel
/// takes a file's lock for each write and one file's writes cannot overlap.
fn write_texts(texts: &[Text], files: &mut HashMap<RecordKind, Behind>) -> Result<(), SinkError> {
    files.par_iter_mut().try_for_each(|(&kind, file)| {
        texts
            .iter()
            .filter(|text| text.kind == Some(kind))
            .try_for_each(|text| file.write_all(&text.bytes))
            .map_err(SinkError::io(format!("writing {}.csv", kind.name())))
    })
}

/// Appends `v` in decimal. Digits are made eight at a time in one integer, and written
/// with fixed-size copies: a formatter's `&str` would cost a copy of variable length, a
/// call per field, and timestamps have nineteen digits.
fn push_int(out: &mut Vec<u8>, v: i64) {
    const E8: u64 = 100_000_000;
    if v < 0 {
        out.push(b'-');
    }
    let v = v.unsigned_abs();
    if v < 10 {
        // Dimension coordinates and flags: the commonest case, and the cheapest.
        out.push(b'0' + v as u8);
    } else if v < E8 {
        push_leading(out, v as u32);
    } else if v < E8 * E8 {
        push_leading(out, (v / E8) as u32);
        out.extend_from_slice(&eight_digits((v % E8) as u32).to_le_bytes());
    } else {
        let low = v % (E8 * E8);
        push_leading(out, (v / (E8 * E8)) as u32);
        out.extend_from_slice(&eight_digits((low / E8) as u32).to_le_bytes());
        out.extend_from_slice(&eight_digits((low % E8) as u32).to_le_bytes());
    }
}

/// Appends `v` (below 10^8) without leading zeros.
fn push_leading(out: &mut Vec<u8>, v: u32) {
    let digits = v.checked_ilog10().unwrap_or(0) as usize + 1;
    // The text's first byte is the most significant digit: shift the leading zeros out.
    let text = eight_digits(v) >> (8 * (8 - digits));
    let start = out.len();
    out.extend_from_slice(&text.to_le_bytes());
    out.truncate(start + digits);
}

/// The eight ASCII digits of `v` (below 10^8, zero-padded), most significant in the lowest
/// byte, computed in parallel lanes of one integer: the halves' four digits in 32-bit
/// lanes, split into pairs in 16-bit lanes, then into digits in 8-bit lanes. Division by
/// 100 and 10 of such small lanes is a multiplication and a shift.
fn eight_digits(v: u32) -> u64 {
    debug_assert!(v < 100_000_000);
    let halves = u64::from(v / 10_000) | (u64::from(v % 10_000) << 32);
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((halves - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    let digits = tens | ((pairs - tens * 10) << 8);
    digits | 0x3030_3030_3030_3030
}

/// A table's rows as CSV text (no header line).
pub fn table_rows(table: &Table) -> Vec<u8> {
    let mut text = Text::default();
    for values in &table.rows {
        for (c, value) in values.iter().enumerate() {
            if c > 0 {
                text.bytes.push(b',');
            }
            text.value(value);
        }
        text.bytes.push(b'\n');
    }
    text.bytes
}

impl CsvSink {
    pub fn create(path: PathBuf) -> Result<CsvSink, SinkError> {
        let staging = Staging::create(path)?;
        Ok(CsvSink {
            staging,
            files: HashMap::new(),
            written: Vec::new(),
            pending: Vec::new(),
            spare: Vec::new(),
        })
    }

    /// Creates a file with its header line. Rows are written in large blocks, so files
    /// need no buffering of their own.
    fn file(
        &mut self,
        name: &str,
        header: impl Iterator<Item = String>,
    ) -> Result<Behind, SinkError> {
        let path = self.staging.dir().join(format!("{name}.csv"));
        let mut out =
            Behind::create(&path).map_err(SinkError::io(format!("creating {}", path.display())))?;
        let header: Vec<String> = header.collect();
        writeln!(out, "{}", header.join(","))
            .map_err(SinkError::io(format!("writing {}", path.display())))?;
        self.written
            .push(self.staging.target().join(format!("{name}.csv")));
        Ok(out)
    }
}

impl Sink for CsvSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        for chunk in window {
            let kind = chunk.batch.kind();
            if !self.files.contains_key(&kind) {
                let args = (kind == RecordKind::Api).then(|| "args".to_owned());
                let header = kind
                    .record_columns()
                    .map(|(name, _)| name.to_owned())
                    .chain(args)
                    .chain(chunk.extra.iter().map(|e| e.name.to_string()));
                let file = self.file(kind.name(), header)?;
                self.files.insert(kind, file);
            }
        }
        let blocks: Vec<(&Chunk, Range<usize>)> = window
            .iter()
            .flat_map(|chunk| {
                (0..chunk.len())
                    .step_by(ROWS_PER_BLOCK)
                    .map(|start| (&**chunk, start..chunk.len().min(start + ROWS_PER_BLOCK)))
            })
            .collect();
        let mut texts = std::mem::take(&mut self.spare);
        texts.resize_with(blocks.len(), Text::default);
        // The window is formatted in parallel blocks while the previous one is written.
        let previous = std::mem::take(&mut self.pending);
        let files = &mut self.files;
        let ((), written) = rayon::join(
            || {
                blocks.into_par_iter().zip(texts.par_iter_mut()).for_each(
                    |((chunk, rows), text)| {
                        let meta = catalog.stream(chunk.stream);
                        visit(
                            &chunk.batch,
                            Block {
                                chunk,
                                meta,
                                rows,
                                text,
                            },
                        )
                    },
                )
            },
            || write_texts(&previous, files),
        );
        self.spare = previous.into_iter().map(Text::recycle).collect();
        self.pending = texts;
        written
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        let mut out = self.file(&table.name, table.columns.iter().cloned())?;
        out.write_all(&table_rows(table))
            .map_err(SinkError::io(format!("writing {}.csv", table.name)))?;
        out.flush()
            .map_err(SinkError::io(format!("writing {}.csv", table.name)))
    }

    fn finish(mut self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        write_texts(&self.pending, &mut self.files)?;
        for (kind, mut out) in self.files.drain() {
            out.flush()
                .map_err(SinkError::io(format!("writing {}.csv", kind.name())))?;
        }
        let CsvSink {
            staging, written, ..
        } = *self;
        staging.commit(earlier_output)?;
        Ok(written)
    }
}

/// Whether `target` holds an earlier CSV output (a directory of `.csv` files): the only
/// thing a CSV sink replaces.
fn earlier_output(target: &Path) -> bool {
    std::fs::read_dir(target).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|e| e.path().extension().is_some_and(|x| x == "csv"))
    })
}

/// Appends a CSV field, quoted when it holds a comma, quote or line break (kernel names
/// with template arguments mostly do).
fn quote(s: &str, line: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    let special = |b: &u8| matches!(b, b',' | b'"' | b'\n' | b'\r');
    // Short names (counters, operations) are cheaper to scan than to hand to memchr.
    let plain = if bytes.len() <= 24 {
        !bytes.iter().any(special)
    } else {
        memchr::memchr3(b',', b'"', b'\n', bytes).is_none()
            && memchr::memchr(b'\r', bytes).is_none()
    };
    if plain {
        line.extend_from_slice(bytes);
        return;
    }
    line.push(b'"');
    let mut rest = bytes;
    while let Some(at) = memchr::memchr(b'"', rest) {
        line.extend_from_slice(&rest[..=at]);
        line.push(b'"');
        rest = &rest[at + 1..];
    }
    line.extend_from_slice(rest);
    line.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_as_std_does() {
        let mut values = vec![0, 1, 9, 10, 99, 100, i64::MAX, i64::MIN, -1, -100_000_000];
        // Every digit count, at both of its ends and in between.
        for digits in 1..=18 {
            let low = 10i64.pow(digits);
            values.extend([low - 1, low, low + 1, low / 3 * 2 + 7, -low]);
        }
        values.push(1_700_000_000_000_436_274);
        for v in values {
            let mut out = b"x".to_vec();
            push_int(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("x{v}"));
        }
    }

    /// A buffer that held a large block goes when a small block used it (its size would
    /// otherwise stay for the rest of the run), and stays when the block filled it.
    #[test]
    fn a_recycled_text_keeps_only_a_buffer_its_block_filled() {
        let text = |capacity, len| {
            let mut bytes = Vec::with_capacity(capacity);
            bytes.resize(len, b'x');
            Text { kind: None, bytes }
        };
        assert_eq!(text(1 << 20, 100).recycle().bytes.capacity(), 0);
        let kept = text(1 << 20, 600 << 10).recycle();
        assert!(kept.bytes.capacity() >= 1 << 20);
        assert!(kept.bytes.is_empty());
    }

    /// A window's texts of several kinds, interleaved, reach their kinds' files each in
    /// the order of the window, however the files are shared among threads.
    #[test]
    fn each_kinds_text_goes_to_its_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let kinds = [
            RecordKind::Api,
            RecordKind::KernelDispatch,
            RecordKind::Marker,
        ];
        let mut files: HashMap<RecordKind, Behind> = (kinds.iter())
            .map(|&kind| (kind, Behind::create(&dir.path().join(kind.name())).unwrap()))
            .collect();
        let texts: Vec<Text> = (0..30)
            .map(|i| Text {
                kind: Some(kinds[i * 7 % 3]),
                bytes: format!("{i}\n").into_bytes(),
            })
            .collect();
        write_texts(&texts[..20], &mut files).unwrap();
        write_texts(&texts[20..], &mut files).unwrap();
        drop(files);
        for kind in kinds {
            let want: String = (0..30)
                .filter(|i| kinds[i * 7 % 3] == kind)
                .map(|i| format!("{i}\n"))
                .collect();
            let got = std::fs::read_to_string(dir.path().join(kind.name())).unwrap();
            assert_eq!(got, want, "{}", kind.name());
        }
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let mut out = Vec::new();
        for s in ["plain", "a,b", "say \"hi\"", "two\nlines", ""] {
            quote(s, &mut out);
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"||"
        );
    }
}
