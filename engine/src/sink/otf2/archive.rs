//! A safe handle on an OTF2 archive being written: at the end of the run, each location's
//! events, held back in a [`Spill`] until then, go through an event writer of its own,
//! several locations at a time (OTF2 guards what its writers share with the archive's
//! [`locks`](super::locks)); then local and global definitions. The busiest locations do
//! not wait for the end: each is written while the run goes on, by a thread of its own
//! ([`Live`]): a location's events are written in order, on one thread, so the busiest
//! location, written after the last record, would otherwise be most of the end.
//!
//! OTF2 keeps a location's events in memory chunks until its memory pool runs dry, and its
//! default pool is large enough to hold a whole location. The archive hands OTF2 its own
//! allocator instead, which gives each location's event buffer [`EVENT_CHUNKS`] chunks and
//! then reports the pool empty, so OTF2 writes the chunks out and starts over: memory stays
//! fixed however many events a location has, a buffer per location being written. Each
//! time a location's chunks are written out, its file is sent on towards the disk
//! ([`Writeback`]), so that the sync before the archive takes its name waits for little.

use std::alloc::Layout;
use std::ffi::{CString, c_void};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread::JoinHandle;

use super::attributes;
use super::ffi::{self, ErrorCode, Otf2};
use super::locks;
use super::spill::{self, Event, Log, Spill};
use crate::sink::SinkError;
use crate::writeback::Writeback;

/// Event chunks a location's buffer may hold before it is written out (OTF2 needs two).
const EVENT_CHUNKS: usize = 2;

/// Locations written at once at most: an open event writer holds about 3 MiB (measured:
/// 16 writers took a 20 M-record replay's peak from 92 MiB to 135 MiB).
const WRITERS: usize = 8;

/// A location (an event stream) of the archive, numbered from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocationId(pub u64);

/// Full blocks (32 KiB) on their way to a [`Live`] writer, at most: 512 KiB a writer.
const LIVE_QUEUE: usize = 16;

pub struct Archive {
    /// Shared with the [`Live`] writers' threads.
    otf2: Arc<Otf2>,
    raw: NonNull<ffi::Archive>,
    /// The folder of the event files, which the memory callbacks are given.
    events: Box<PathBuf>,
    /// Set once `OTF2_Archive_Close` ran, successfully or not.
    closed: bool,
}

/// A failed OTF2 call.
pub fn fault(message: String) -> SinkError {
    SinkError::Otf2 {
        context: "writing the OTF2 archive".into(),
        message,
    }
}

impl Archive {
    /// Creates the archive `name` (`name.otf2`, `name.def`, `name/`) in `dir`, with `otf2`'s
    /// functions.
    pub fn create(otf2: Otf2, dir: &Path, name: &str) -> Result<Archive, SinkError> {
        let dir_c = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| fault(format!("{} holds a NUL byte", dir.display())))?;
        let name_c = CString::new(name).expect("archive names are ours");
        // SAFETY: both strings are NUL-terminated and outlive the call.
        let raw = unsafe {
            (otf2.archive_open)(
                dir_c.as_ptr(),
                name_c.as_ptr(),
                ffi::FILEMODE_WRITE,
                ffi::CHUNK_SIZE_MIN,
                4 * ffi::CHUNK_SIZE_MIN,
                ffi::SUBSTRATE_POSIX,
                ffi::COMPRESSION_NONE,
            )
        };
        let Some(raw) = NonNull::new(raw) else {
            return Err(fault(format!(
                "cannot create an archive in {}",
                dir.display()
            )));
        };
        let archive = Archive {
            otf2: Arc::new(otf2),
            raw,
            events: Box::new(dir.join(name)),
            closed: false,
        };
        archive.configure()?;
        Ok(archive)
    }

    fn configure(&self) -> Result<(), SinkError> {
        let (o, raw) = (&self.otf2, self.raw.as_ptr());
        let (mut major, mut minor, mut bugfix) = (0u8, 0u8, 0u8);
        let creator = CString::new(format!("rocflow {}", env!("CARGO_PKG_VERSION")))
            .expect("no NUL in a version");
        let events: *const PathBuf = &*self.events;
        // SAFETY: `raw` is open; the callback tables are statics; OTF2 copies the creator;
        // the events' folder lives in its box as long as the archive.
        unsafe {
            self.check(
                (o.archive_get_version)(raw, &mut major, &mut minor, &mut bugfix),
                "OTF2_Archive_GetVersion",
            )?;
            if major < 3 {
                return Err(fault(format!(
                    "the OTF2 library is version {major}.{minor}.{bugfix}; rocflow needs 3.0 or \
                     later (`apt-get install {}`)",
                    ffi::PACKAGE
                )));
            }
            self.check(
                (o.archive_set_creator)(raw, creator.as_ptr()),
                "OTF2_Archive_SetCreator",
            )?;
            self.check(
                (o.archive_set_flush_callbacks)(raw, &FLUSH, std::ptr::null_mut()),
                "OTF2_Archive_SetFlushCallbacks",
            )?;
            self.check(
                (o.archive_set_memory_callbacks)(raw, &MEMORY, events.cast_mut().cast()),
                "OTF2_Archive_SetMemoryCallbacks",
            )?;
            self.check(
                (o.archive_set_locking_callbacks)(raw, &locks::CALLBACKS, std::ptr::null_mut()),
                "OTF2_Archive_SetLockingCallbacks",
            )?;
            self.check(
                (o.archive_set_serial_collective_callbacks)(raw),
                "OTF2_Archive_SetSerialCollectiveCallbacks",
            )?;
            self.check((o.archive_open_evt_files)(raw), "OTF2_Archive_OpenEvtFiles")
        }
    }

    fn check(&self, code: ErrorCode, call: &str) -> Result<(), SinkError> {
        check(&self.otf2, code, call)
    }

    /// Where a thread writes this archive's events.
    fn target(&self) -> Target {
        Target {
            otf2: Arc::clone(&self.otf2),
            raw: self.raw,
        }
    }

    /// Starts writing `location`'s events on a thread of its own: first those `spilled`
    /// (blocks taken from its [`Log`]), then the blocks [`Live::send`] gives it.
    pub fn live(
        &self,
        spill: &Arc<Spill>,
        location: LocationId,
        spilled: Vec<(u64, usize)>,
    ) -> Result<Live, SinkError> {
        let (blocks, received) = std::sync::mpsc::sync_channel(LIVE_QUEUE);
        let target = self.target();
        let spill = Arc::clone(spill);
        let thread = std::thread::Builder::new()
            .name(format!("otf2 location {}", location.0))
            .spawn(move || target.write_live(location, &spill, &spilled, received))
            .map_err(SinkError::io("starting an OTF2 location's writer"))?;
        Ok(Live {
            blocks: Some(blocks),
            thread: Some(thread),
        })
    }

    /// Writes every location's events not written yet (`None`: written), [`WRITERS`]
    /// locations at a time at most, each thread taking the next location not yet taken.
    fn write_events(&self, spill: &Spill, logs: &[Option<Log>]) -> Result<(), SinkError> {
        let locations = Locations {
            target: self.target(),
            spill,
            logs,
            next: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        };
        let writers = rayon::current_num_threads().clamp(1, WRITERS);
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..writers)
                .map(|_| scope.spawn(|| locations.write_each()))
                .collect();
            // The first failure; the scope waits for the other threads.
            threads
                .into_iter()
                .try_for_each(|t| t.join().expect("a writer does not panic"))
        })
    }

    /// Writes each location's events (`logs`, in location order, hold them in `spill`;
    /// `None` for a location whose [`Live`] writer finished), closes the event files, writes
    /// an (empty) local definition file per location as readers expect, lets `define` write
    /// the global definitions, and closes the archive.
    pub fn finish(
        mut self,
        spill: &Spill,
        logs: &[Option<Log>],
        define: impl FnOnce(&mut GlobalDefs<'_>) -> Result<(), SinkError>,
    ) -> Result<(), SinkError> {
        self.write_events(spill, logs)?;
        let raw = self.raw.as_ptr();
        let o = &self.otf2;
        // SAFETY: the archive is closed last, after which `closed` keeps `drop` from
        // closing it again.
        unsafe {
            self.check(
                (o.archive_close_evt_files)(raw),
                "OTF2_Archive_CloseEvtFiles",
            )?;
            self.check((o.archive_open_def_files)(raw), "OTF2_Archive_OpenDefFiles")?;
            for location in 0..logs.len() as u64 {
                let writer = (o.archive_get_def_writer)(raw, location);
                if writer.is_null() {
                    return Err(fault(format!(
                        "cannot open the definitions of location {location}"
                    )));
                }
                self.check(
                    (o.archive_close_def_writer)(raw, writer),
                    "OTF2_Archive_CloseDefWriter",
                )?;
            }
            self.check(
                (o.archive_close_def_files)(raw),
                "OTF2_Archive_CloseDefFiles",
            )?;
            let writer = NonNull::new((o.archive_get_global_def_writer)(raw))
                .ok_or_else(|| fault("cannot open the global definitions".into()))?;
            define(&mut GlobalDefs {
                archive: &self,
                writer,
            })?;
            self.closed = true;
            self.check((o.archive_close)(raw), "OTF2_Archive_Close")
        }
    }
}

fn check(otf2: &Otf2, code: ErrorCode, call: &str) -> Result<(), SinkError> {
    if code == ffi::SUCCESS {
        Ok(())
    } else {
        Err(fault(format!("{call} failed: {}", otf2.describe(code))))
    }
}

/// Writes `event` with `writer`, its attributes through `list`.
fn emit(
    otf2: &Otf2,
    writer: NonNull<ffi::EvtWriter>,
    list: &AttributeList<'_>,
    event: Event<'_>,
) -> Result<(), SinkError> {
    let list = list.raw;
    let attach = |attributes: &[(u32, u64)]| {
        attributes.iter().try_for_each(|&(id, value)| {
            let list = list.as_ptr();
            // SAFETY: the list is alive.
            let (code, call) = if attributes::is_argument(id) {
                let code = unsafe { (otf2.attribute_list_add_string_ref)(list, id, value as u32) };
                (code, "OTF2_AttributeList_AddStringRef")
            } else {
                let code = unsafe { (otf2.attribute_list_add_uint64)(list, id, value) };
                (code, "OTF2_AttributeList_AddUint64")
            };
            check(otf2, code, call)
        })
    };
    let (writer, list) = (writer.as_ptr(), list.as_ptr());
    // SAFETY: the writer is open; OTF2 empties the list once it wrote it; the metric's type
    // and value arrays hold one element each.
    match event {
        Event::Enter {
            time,
            region,
            attributes,
        } => {
            attach(attributes)?;
            let code = unsafe { (otf2.evt_enter)(writer, list, time, region) };
            check(otf2, code, "OTF2_EvtWriter_Enter")
        }
        Event::Leave { time, region } => {
            let code = unsafe { (otf2.evt_leave)(writer, std::ptr::null_mut(), time, region) };
            check(otf2, code, "OTF2_EvtWriter_Leave")
        }
        Event::Metric {
            time,
            metric,
            value,
            attributes,
        } => {
            attach(attributes)?;
            let code = unsafe {
                (otf2.evt_metric)(writer, list, time, metric, 1, &ffi::TYPE_DOUBLE, &value)
            };
            check(otf2, code, "OTF2_EvtWriter_Metric")
        }
    }
}

// SAFETY: OTF2 objects have no thread affinity; the archive's locks guard what writers on
// several threads share.
unsafe impl Send for Archive {}

/// Where a thread writes events: the archive, whose locks guard what its writers share.
struct Target {
    otf2: Arc<Otf2>,
    raw: NonNull<ffi::Archive>,
}

// SAFETY: the archive has locking callbacks, and each thread writes through an event
// writer and attribute list of its own; a `Live` thread ends before the archive closes
// (see `Live`), and the threads of `Archive::write_events` within it.
unsafe impl Send for Target {}
unsafe impl Sync for Target {}

impl Target {
    /// Writes `location`'s events, which `events` hands to the function it is given,
    /// through an event writer and attribute list of its own; the writer is closed however
    /// `events` ends.
    fn write(
        &self,
        location: LocationId,
        events: impl FnOnce(&mut dyn FnMut(Event<'_>) -> Result<(), SinkError>) -> Result<(), SinkError>,
    ) -> Result<(), SinkError> {
        let otf2 = &*self.otf2;
        let list = AttributeList::new(otf2)
            .ok_or_else(|| fault("cannot allocate an attribute list".into()))?;
        let raw = self.raw.as_ptr();
        // SAFETY: the archive and its event files are open.
        let writer = unsafe { (otf2.archive_get_evt_writer)(raw, location.0) };
        let writer = NonNull::new(writer)
            .ok_or_else(|| fault(format!("cannot open the events of location {}", location.0)))?;
        let written = events(&mut |event| emit(otf2, writer, &list, event));
        // SAFETY: the writer was opened above and is closed once.
        let closed = unsafe { (otf2.archive_close_evt_writer)(raw, writer.as_ptr()) };
        written?;
        check(otf2, closed, "OTF2_Archive_CloseEvtWriter")
    }

    /// A [`Live`] writer's thread: `location`'s `spilled` blocks, then each block received,
    /// until the sender is gone.
    fn write_live(
        &self,
        location: LocationId,
        spill: &Spill,
        spilled: &[(u64, usize)],
        received: Receiver<Vec<u8>>,
    ) -> Result<(), SinkError> {
        self.write(location, |emit| {
            spill
                .replay_blocks(spilled, &mut *emit)
                .map_err(SinkError::io("reading the OTF2 events back"))??;
            received
                .iter()
                .try_for_each(|block| spill::decode(&block, &mut &mut *emit))
        })
    }
}

/// A location written while the run goes on, by a thread of its own; see [`Archive::live`].
///
/// It must finish, or be dropped, before the archive closes: the archive's owner drops its
/// timelines, which hold these, before the archive.
pub struct Live {
    /// Taken when the writer is told that no more come.
    blocks: Option<SyncSender<Vec<u8>>>,
    thread: Option<JoinHandle<Result<(), SinkError>>>,
}

impl Live {
    /// Hands the writer a full block of its location's events. Should the writer have
    /// failed, the block is dropped: [`Live::finish`] says why.
    pub fn send(&self, block: Vec<u8>) {
        if let Some(blocks) = &self.blocks {
            let _ = blocks.send(block);
        }
    }

    /// Hands the writer the `last` block and waits for it to write everything and close
    /// its location.
    pub fn finish(mut self, last: Vec<u8>) -> Result<(), SinkError> {
        self.send(last);
        self.blocks = None;
        let thread = self.thread.take().expect("finished once");
        thread.join().expect("a writer does not panic")
    }
}

impl Drop for Live {
    /// A writer dropped before it finished (the run failed) writes what it was given and
    /// ends before the archive closes.
    fn drop(&mut self) {
        self.blocks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the threads writing locations at the end share.
struct Locations<'a> {
    target: Target,
    spill: &'a Spill,
    /// Each location's events; `None` for those written already.
    logs: &'a [Option<Log>],
    /// The next location no thread has taken.
    next: AtomicUsize,
    /// Set by a thread whose location failed: the others take no further location.
    failed: AtomicBool,
}

impl Locations<'_> {
    /// Writes locations until none is left, or one fails (the others stop at their next).
    fn write_each(&self) -> Result<(), SinkError> {
        while !self.failed.load(Ordering::Relaxed) {
            let location = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(log) = self.logs.get(location) else {
                break;
            };
            let Some(log) = log else {
                continue;
            };
            let written = self.target.write(LocationId(location as u64), |emit| {
                (self.spill.replay(log, emit))
                    .map_err(SinkError::io("reading the OTF2 events back"))?
            });
            written.inspect_err(|_| self.failed.store(true, Ordering::Relaxed))?;
        }
        Ok(())
    }
}

/// An attribute list, emptied by OTF2 after each event that takes it.
struct AttributeList<'a> {
    otf2: &'a Otf2,
    raw: NonNull<ffi::AttributeList>,
}

impl<'a> AttributeList<'a> {
    fn new(otf2: &'a Otf2) -> Option<AttributeList<'a>> {
        // SAFETY: no preconditions; the list is deleted on drop.
        let raw = NonNull::new(unsafe { (otf2.attribute_list_new)() })?;
        Some(AttributeList { otf2, raw })
    }
}

impl Drop for AttributeList<'_> {
    fn drop(&mut self) {
        // SAFETY: made by `new`, deleted once.
        unsafe { (self.otf2.attribute_list_delete)(self.raw.as_ptr()) };
    }
}

impl Drop for Archive {
    /// An archive dropped before `finish` completed is closed to release OTF2's resources;
    /// what it wrote is the caller's to remove.
    fn drop(&mut self) {
        if !self.closed {
            // SAFETY: released once; writers close with the archive.
            unsafe { (self.otf2.archive_close)(self.raw.as_ptr()) };
        }
    }
}

/// The archive's global definition writer, during [`Archive::finish`].
pub struct GlobalDefs<'a> {
    archive: &'a Archive,
    writer: NonNull<ffi::GlobalDefWriter>,
}

/// Writes one definition: `name(writer, args...)` with the outcome checked.
macro_rules! define {
    ($self:ident, $field:ident, $call:literal $(, $arg:expr)*) => {{
        // SAFETY: the writer is open during `finish`; pointer arguments point at live data.
        let code = unsafe { ($self.archive.otf2.$field)($self.writer.as_ptr() $(, $arg)*) };
        $self.archive.check(code, $call)
    }};
}

impl GlobalDefs<'_> {
    pub fn clock_properties(
        &mut self,
        ticks_per_second: u64,
        offset: u64,
        length: u64,
        realtime_ns: Option<u64>,
    ) -> Result<(), SinkError> {
        let realtime = realtime_ns.unwrap_or(ffi::UNDEFINED_TIMESTAMP);
        define!(
            self,
            def_clock_properties,
            "OTF2_GlobalDefWriter_WriteClockProperties",
            ticks_per_second,
            offset,
            length,
            realtime
        )
    }

    pub fn paradigm(&mut self, paradigm: u8, name: u32, class: u8) -> Result<(), SinkError> {
        define!(
            self,
            def_paradigm,
            "OTF2_GlobalDefWriter_WriteParadigm",
            paradigm,
            name,
            class
        )
    }

    pub fn string(&mut self, id: u32, text: &str) -> Result<(), SinkError> {
        // Names come from the application (kernel names, marker messages): a NUL ends them.
        let text =
            CString::new(text.split('\0').next().unwrap_or_default()).expect("split at the NUL");
        define!(
            self,
            def_string,
            "OTF2_GlobalDefWriter_WriteString",
            id,
            text.as_ptr()
        )
    }

    /// An attribute of `kind`: `ffi::TYPE_UINT64`, or `ffi::TYPE_STRING` (a string id).
    pub fn attribute(
        &mut self,
        id: u32,
        name: u32,
        description: u32,
        kind: u8,
    ) -> Result<(), SinkError> {
        define!(
            self,
            def_attribute,
            "OTF2_GlobalDefWriter_WriteAttribute",
            id,
            name,
            description,
            kind
        )
    }

    pub fn system_tree_node(
        &mut self,
        id: u32,
        name: u32,
        class: u32,
        parent: Option<u32>,
        domain: u8,
    ) -> Result<(), SinkError> {
        let parent = parent.unwrap_or(ffi::UNDEFINED_UINT32);
        define!(
            self,
            def_system_tree_node,
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            id,
            name,
            class,
            parent
        )?;
        define!(
            self,
            def_system_tree_node_domain,
            "OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain",
            id,
            domain
        )
    }

    pub fn location_group(
        &mut self,
        id: u32,
        name: u32,
        kind: u8,
        node: u32,
        creator: Option<u32>,
    ) -> Result<(), SinkError> {
        let creator = creator.unwrap_or(ffi::UNDEFINED_UINT32);
        define!(
            self,
            def_location_group,
            "OTF2_GlobalDefWriter_WriteLocationGroup",
            id,
            name,
            kind,
            node,
            creator
        )
    }

    pub fn location(
        &mut self,
        id: LocationId,
        name: u32,
        kind: u8,
        events: u64,
        group: u32,
    ) -> Result<(), SinkError> {
        define!(
            self,
            def_location,
            "OTF2_GlobalDefWriter_WriteLocation",
            id.0,
            name,
            kind,
            events,
            group
        )
    }

    pub fn region(
        &mut self,
        id: u32,
        name: u32,
        canonical: u32,
        role: u8,
        paradigm: u8,
    ) -> Result<(), SinkError> {
        let none = ffi::UNDEFINED_UINT32;
        define!(
            self,
            def_region,
            "OTF2_GlobalDefWriter_WriteRegion",
            id,
            name,
            canonical,
            none,
            role,
            paradigm,
            ffi::REGION_FLAG_NONE,
            none,
            0,
            0
        )
    }

    /// A metric class of one member, a double sampled at points in time by a GPU.
    pub fn metric(
        &mut self,
        id: u32,
        name: u32,
        description: u32,
        unit: u32,
    ) -> Result<(), SinkError> {
        define!(
            self,
            def_metric_member,
            "OTF2_GlobalDefWriter_WriteMetricMember",
            id,
            name,
            description,
            ffi::METRIC_TYPE_OTHER,
            ffi::METRIC_ABSOLUTE_POINT,
            ffi::TYPE_DOUBLE,
            ffi::BASE_DECIMAL,
            0,
            unit
        )?;
        define!(
            self,
            def_metric_class,
            "OTF2_GlobalDefWriter_WriteMetricClass",
            id,
            1,
            &id,
            ffi::METRIC_ASYNCHRONOUS,
            ffi::RECORDER_KIND_GPU
        )
    }

    pub fn metric_recorder(&mut self, metric: u32, location: LocationId) -> Result<(), SinkError> {
        define!(
            self,
            def_metric_class_recorder,
            "OTF2_GlobalDefWriter_WriteMetricClassRecorder",
            metric,
            location.0
        )
    }
}

/// Flush whenever OTF2 asks; no BufferFlush events (they would add events to the counts).
static FLUSH: ffi::FlushCallbacks = ffi::FlushCallbacks {
    pre_flush: Some(always_flush),
    post_flush: None,
};

unsafe extern "C" fn always_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    ffi::FLUSH
}

static MEMORY: ffi::MemoryCallbacks = ffi::MemoryCallbacks {
    allocate: Some(allocate),
    free_all: Some(free_all),
};

/// One OTF2 buffer, behind its `perBufferData` pointer: its chunks, and for a location's
/// events, the file they are written to, opened once they first are.
#[derive(Default)]
struct Buffer {
    chunks: Vec<(NonNull<u8>, Layout)>,
    file: Option<File>,
    writeback: Writeback,
}

impl Buffer {
    /// Notes that OTF2 wrote the chunks out to `location`'s file in `events`.
    fn written(&mut self, events: &Path, location: u64) {
        let bytes = self.chunks.iter().map(|(_, layout)| layout.size()).sum();
        if self.file.is_none() {
            // Only a hint: a file that cannot be opened is synced whole at the end.
            self.file = File::open(events.join(format!("{location}.evt"))).ok();
        }
        if let Some(file) = &self.file {
            self.writeback.wrote(file, bytes);
        }
    }
}

/// Gives a buffer a chunk, or none when an event buffer holds [`EVENT_CHUNKS`] already,
/// which makes OTF2 write its chunks out and free them. Definition buffers get what they
/// ask for: they hold the run's definitions, which are small.
unsafe extern "C" fn allocate(
    _: *mut c_void,
    file_type: u8,
    _: u64,
    per_buffer: *mut *mut c_void,
    size: u64,
) -> *mut c_void {
    // SAFETY: OTF2 passes this buffer's slot, null at first and ours afterwards.
    let buffer = unsafe {
        if (*per_buffer).is_null() {
            *per_buffer = Box::into_raw(Box::<Buffer>::default()).cast();
        }
        &mut *(*per_buffer).cast::<Buffer>()
    };
    let chunks = &mut buffer.chunks;
    if file_type == ffi::FILETYPE_EVENTS && chunks.len() >= EVENT_CHUNKS {
        return std::ptr::null_mut();
    }
    let Ok(layout) = Layout::from_size_align(size as usize, 64) else {
        return std::ptr::null_mut();
    };
    // SAFETY: chunks are never empty (OTF2's minimum is 256 KiB).
    let Some(chunk) = NonNull::new(unsafe { std::alloc::alloc(layout) }) else {
        return std::ptr::null_mut();
    };
    chunks.push((chunk, layout));
    chunk.as_ptr().cast()
}

/// Frees every chunk of a buffer, which OTF2 has written out, and the buffer at the final
/// call.
unsafe extern "C" fn free_all(
    events: *mut c_void,
    file_type: u8,
    location: u64,
    per_buffer: *mut *mut c_void,
    final_: bool,
) {
    // SAFETY: the slot holds null or the buffer `allocate` made; OTF2 no longer uses the
    // chunks it frees; `events` is the archive's folder of event files, given with the
    // callbacks.
    unsafe {
        if (*per_buffer).is_null() {
            return;
        }
        let buffer = (*per_buffer).cast::<Buffer>();
        // The last chunks are synced with the archive, soon after.
        if file_type == ffi::FILETYPE_EVENTS && !final_ {
            (*buffer).written(&*events.cast::<PathBuf>(), location);
        }
        for (chunk, layout) in (*buffer).chunks.drain(..) {
            std::alloc::dealloc(chunk.as_ptr(), layout);
        }
        if final_ {
            drop(Box::from_raw(buffer));
            *per_buffer = std::ptr::null_mut();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writeback::STEP;
    use crate::writeback::tests::STARTED;

    /// OTF2's calls for one location's event buffer: its chunks given, written out and
    /// freed, over and over, then freed a last time.
    #[test]
    fn a_locations_event_file_is_sent_to_disk_every_step_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("7.evt"), b"events").unwrap();
        let events = dir.path().to_path_buf();
        let user: *mut c_void = (&raw const events).cast_mut().cast();
        let mut per_buffer: *mut c_void = std::ptr::null_mut();
        let chunk = STEP / 4;
        let started = STARTED.get();
        for flush in 1..=8 {
            // SAFETY: as OTF2 calls them: the same buffer's slot throughout.
            unsafe {
                for _ in 0..EVENT_CHUNKS {
                    let given = allocate(user, ffi::FILETYPE_EVENTS, 7, &mut per_buffer, chunk);
                    assert!(!given.is_null());
                }
                let refused = allocate(user, ffi::FILETYPE_EVENTS, 7, &mut per_buffer, chunk);
                assert!(refused.is_null(), "the buffer holds {EVENT_CHUNKS} chunks");
                free_all(user, ffi::FILETYPE_EVENTS, 7, &mut per_buffer, false);
            }
            let written = flush * EVENT_CHUNKS as u64 * chunk;
            assert_eq!(STARTED.get() - started, (written / STEP) as usize);
        }
        // SAFETY: the last call, as when the writer closes.
        unsafe { free_all(user, ffi::FILETYPE_EVENTS, 7, &mut per_buffer, true) };
        assert!(per_buffer.is_null());
    }
}
