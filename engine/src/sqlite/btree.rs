//! Tables written in SQLite's file format directly, for rows that only ever append in order
//! of their rowids. SQLite's insert path costs a few hundred nanoseconds a row, on the one
//! thread that may write a database; a B-tree built from its leaves up costs about what
//! encoding the row does.
//!
//! SQLite creates the database, schema and all, and closes it. [`Pages`] then appends pages
//! past its end; each [`AppendTable`] fills leaves in rowid order and, when finished, the
//! interior pages above them, and puts its top page in place of the empty root page SQLite
//! made for the table. [`Pages::close`] brings the file's header up to date, and SQLite opens
//! the file afterwards as any other: `PRAGMA integrity_check` finds it whole.

use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::Value;
use crate::descriptors::PooledFile;

/// The first bytes of every SQLite database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// The byte SQLite locks files at (its `PENDING_BYTE`): the page holding it is never used.
const LOCK_BYTE: u64 = 0x4000_0000;
/// Page kinds, the first byte of a B-tree page.
const TABLE_INTERIOR: u8 = 0x05;
const TABLE_LEAF: u8 = 0x0d;
/// Header bytes of a leaf page, and of an interior page (which adds its right-most child).
const LEAF_HEADER: usize = 8;
const INTERIOR_HEADER: usize = 12;

/// The pages of a database that SQLite wrote and closed, and those appended past them.
/// Every table of the database appends to it, wherever the tables are sent: pages are
/// numbered atomically and written in place.
pub struct Pages {
    /// One of many (a database per process), so it shares the run's descriptors.
    file: PooledFile,
    size: usize,
    /// The last page number given out.
    last: AtomicU32,
}

impl Pages {
    /// Opens the database at `path` to append pages to it.
    pub fn open(path: &Path) -> io::Result<Pages> {
        let file = PooledFile::open(path)?;
        let mut header = [0u8; 100];
        file.at(|f| f.read_exact_at(&mut header, 0))?;
        if &header[..16] != MAGIC {
            return Err(invalid("not a SQLite database"));
        }
        let size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 1 << 16,
            size => usize::from(size),
        };
        if header[20] != 0 {
            return Err(invalid(
                "its pages reserve bytes, which tables here do not leave",
            ));
        }
        let length = file.at(|f| Ok(f.metadata()?.len()))?;
        let pages = u32::from_be_bytes(header[28..32].try_into().expect("four bytes"));
        if length != u64::from(pages) * size as u64 {
            return Err(invalid("its header's size differs from the file's"));
        }
        Ok(Pages {
            file,
            size,
            last: AtomicU32::new(pages),
        })
    }

    /// The number of a new page, past every other.
    fn allocate(&self) -> u32 {
        let lock = lock_page(self.size);
        loop {
            let page = self.last.fetch_add(1, Ordering::Relaxed) + 1;
            if page != lock {
                return page;
            }
        }
    }

    /// Writes `bytes`, whole pages, from page `page` on.
    fn write(&self, page: u32, bytes: &[u8]) -> io::Result<()> {
        debug_assert_eq!(bytes.len() % self.size, 0);
        let offset = u64::from(page - 1) * self.size as u64;
        self.file.write_all_at(bytes, offset)
    }

    /// Completes the file once every table is finished: its header counts the pages, and
    /// its change counter moves on, as after any write.
    pub fn close(self) -> io::Result<()> {
        let mut counter = [0u8; 4];
        self.file.at(|f| f.read_exact_at(&mut counter, 24))?;
        let counter = u32::from_be_bytes(counter).wrapping_add(1).to_be_bytes();
        let pages = self.last.into_inner().to_be_bytes();
        self.file.at(|f| {
            f.write_all_at(&[counter, pages].concat(), 24)?;
            // The "version-valid-for" number: the page count is current as of this change.
            f.write_all_at(&counter, 92)
        })
    }
}

/// The page that holds the lock byte, for pages of `size` bytes.
fn lock_page(size: usize) -> u32 {
    (LOCK_BYTE / size as u64 + 1) as u32
}

/// Rows of a table encoded as records, in order of their rowids: encoded on any thread, a
/// run at a time, then filled into the table's leaves by [`AppendTable::fill`].
#[derive(Default)]
pub struct Records {
    bytes: Vec<u8>,
    /// Each row's rowid and where its record ends in `bytes`.
    rows: Vec<(i64, usize)>,
}

impl Records {
    /// Adds a row: `record` is its payload (see [`Record`]).
    pub fn push(&mut self, rowid: i64, record: &[u8]) {
        self.bytes.extend_from_slice(record);
        self.rows.push((rowid, self.bytes.len()));
    }

    /// How many rows it has.
    pub fn count(&self) -> usize {
        self.rows.len()
    }

    /// Each row's rowid and record, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &[u8])> {
        let starts = std::iter::once(0).chain(self.rows.iter().map(|&(_, end)| end));
        (self.rows.iter().zip(starts))
            .map(|(&(rowid, end), start)| (rowid, &self.bytes[start..end]))
    }
}

/// A table's B-tree, built by appending rows in order of their rowids. Rows are filled into
/// pages that have no numbers yet ([`AppendTable::fill`]), which the tables of a database
/// are then given one table after another ([`AppendTable::number`]), so that the file is
/// the same whichever threads filled which tables; then the pages are written
/// ([`Numbered::write`]), while the tables fill the next.
pub struct AppendTable {
    pages: Arc<Pages>,
    /// The page SQLite gave the table as its root.
    root: u32,
    /// The leaf being filled, and where its cells point at overflow pages not yet numbered:
    /// the offset of each pointer and the index of its page in `fresh`.
    leaf: Page,
    leaf_links: Vec<(usize, usize)>,
    /// The last rowid appended, and whether any was.
    last: Option<i64>,
    /// Full leaves written, in order.
    leaves: Vec<Child>,
    /// Pages filled since they were last numbered.
    fresh: Fresh,
    /// The bytes of pages written, kept for pages to come: a table fills megabytes at a
    /// time, which the allocator would otherwise map and fault in anew each time.
    spare: Vec<u8>,
}

/// Pages filled and not yet numbered: their bytes, one page after another; where they
/// point at each other (the offset of a pointer in `bytes`, and the index of the page it
/// names); and the leaves among them (index and last rowid).
#[derive(Default)]
struct Fresh {
    bytes: Vec<u8>,
    links: Vec<(usize, usize)>,
    leaves: Vec<(usize, i64)>,
}

/// Pages numbered and not yet written, which may be written on any thread while their
/// table fills the next: their bytes, one page after another, and their numbers.
pub struct Numbered {
    pages: Arc<Pages>,
    bytes: Vec<u8>,
    numbers: Vec<u32>,
}

impl Fresh {
    /// Adds a page; returns its index.
    fn add(&mut self, page: &[u8]) -> usize {
        self.bytes.extend_from_slice(page);
        self.len(page.len()) - 1
    }

    fn len(&self, size: usize) -> usize {
        self.bytes.len() / size
    }
}

/// A page under an interior page: its number and the last rowid below it.
#[derive(Debug, Clone, Copy)]
struct Child {
    page: u32,
    last: i64,
}

impl AppendTable {
    /// A table whose root page, empty, is `root`.
    pub fn new(pages: Arc<Pages>, root: u32) -> AppendTable {
        AppendTable {
            leaf: Page::new(pages.size, LEAF_HEADER),
            leaf_links: Vec::new(),
            pages,
            root,
            last: None,
            leaves: Vec::new(),
            fresh: Fresh::default(),
            spare: Vec::new(),
        }
    }

    /// Fills `rows` (rowids and records, such as [`Records::iter`] gives) into leaves,
    /// each row's rowid larger than any before it. Where the rows fill leaves of their
    /// own, they are first shared out among the leaves (a walk over the cells' sizes), and
    /// the leaves are filled in parallel: a table of most of a run's rows fills on every
    /// thread, not on one.
    pub fn fill(&mut self, rows: &[(i64, &[u8])]) -> io::Result<()> {
        let leaves = self.share(rows)?;
        // The rows of the leaf being filled, those of whole leaves, and those of the next.
        let [first, .., last] = leaves.as_slice() else {
            return rows
                .iter()
                .try_for_each(|&(id, record)| self.append(id, record));
        };
        for &(rowid, record) in &rows[..first.rows.start] {
            self.append(rowid, record)?;
        }
        self.retire_leaf(self.last.expect("a full leaf holds rows"));
        self.fill_leaves(rows, &leaves[..leaves.len() - 1]);
        self.last = Some(rows[last.rows.start - 1].0);
        for &(rowid, record) in &rows[last.rows.start..] {
            self.append(rowid, record)?;
        }
        Ok(())
    }

    /// The rows of each leaf that `rows` begin, and how many overflow pages they spill to;
    /// refuses rows out of order.
    fn share(&self, rows: &[(i64, &[u8])]) -> io::Result<Vec<Leaf>> {
        let size = self.pages.size;
        let (mut room, mut last) = (self.leaf.room, self.last);
        let mut leaves: Vec<Leaf> = Vec::new();
        for (i, &(rowid, record)) in rows.iter().enumerate() {
            if let Some(last) = last
                && rowid <= last
            {
                return Err(out_of_order(rowid, last));
            }
            last = Some(rowid);
            let cell = Cell::of(size, rowid, record.len());
            if !room.fits(cell.len) {
                if let Some(before) = leaves.last_mut() {
                    before.rows.end = i;
                }
                leaves.push(Leaf {
                    rows: i..rows.len(),
                    overflow: 0,
                });
                room = Room::new(size, LEAF_HEADER);
            }
            room.take(cell.len);
            if let Some(leaf) = leaves.last_mut() {
                leaf.overflow += cell.overflow(size, record.len());
            }
        }
        Ok(leaves)
    }

    /// Fills `leaves` of `rows`, each after its overflow pages, in parallel, into fresh
    /// pages.
    fn fill_leaves(&mut self, rows: &[(i64, &[u8])], leaves: &[Leaf]) {
        let size = self.pages.size;
        let first = self.fresh.len(size);
        let pages: usize = leaves.iter().map(|leaf| leaf.overflow + 1).sum();
        self.fresh.bytes.resize((first + pages) * size, 0);
        // Leaves a job: enough to outweigh handing them over.
        const JOB: usize = 8;
        let mut jobs = Vec::new();
        let (mut out, mut page) = (&mut self.fresh.bytes[first * size..], first);
        for job in leaves.chunks(JOB) {
            let pages: usize = job.iter().map(|leaf| leaf.overflow + 1).sum();
            let (these, rest) = out.split_at_mut(pages * size);
            jobs.push((job, these, page));
            (out, page) = (rest, page + pages);
        }
        let filled: Vec<Pointers> = (jobs.into_par_iter())
            .map(|(job, out, page)| fill_pages(size, rows, job, out, page))
            .collect();
        for filled in filled {
            self.fresh.links.extend(filled.links);
            self.fresh.leaves.extend(filled.leaves);
        }
    }

    fn append(&mut self, rowid: i64, record: &[u8]) -> io::Result<()> {
        if let Some(last) = self.last
            && rowid <= last
        {
            return Err(out_of_order(rowid, last));
        }
        let cell = Cell::of(self.pages.size, rowid, record.len());
        if !self.leaf.room.fits(cell.len) {
            let last = self.last.expect("a full leaf holds rows");
            self.retire_leaf(last);
        }
        if let Some(at) = put_cell(&mut self.leaf, rowid, record, cell) {
            let first = self.overflow(&record[cell.local..]);
            self.leaf_links.push((at, first));
        }
        self.last = Some(rowid);
        Ok(())
    }

    /// Moves the leaf being filled, whose last row is `last`, to the fresh pages.
    fn retire_leaf(&mut self, last: i64) {
        let base = self.fresh.bytes.len();
        let index = self.fresh.add(self.leaf.bytes(TABLE_LEAF));
        let links = self.leaf_links.drain(..).map(|(at, to)| (base + at, to));
        self.fresh.links.extend(links);
        self.fresh.leaves.push((index, last));
        self.leaf.clear();
    }

    /// Adds `rest` of a payload as a chain of overflow pages; returns the first's index.
    fn overflow(&mut self, rest: &[u8]) -> usize {
        let size = self.pages.size;
        let first = self.fresh.len(size);
        let count = overflow_pages(size, rest.len());
        self.fresh.bytes.resize((first + count) * size, 0);
        let out = &mut self.fresh.bytes[first * size..];
        spill(size, rest, out, first, &mut self.fresh.links);
        first
    }

    /// Gives the pages filled since the last call their numbers, past every other page,
    /// and hands them over to be written.
    pub fn number(&mut self) -> Numbered {
        let fresh = &mut self.fresh;
        let count = fresh.len(self.pages.size);
        let numbers: Vec<u32> = (0..count).map(|_| self.pages.allocate()).collect();
        for &(at, to) in &fresh.links {
            fresh.bytes[at..at + 4].copy_from_slice(&numbers[to].to_be_bytes());
        }
        fresh.links.clear();
        for &(at, to) in &self.leaf_links {
            self.leaf.bytes[at..at + 4].copy_from_slice(&numbers[to].to_be_bytes());
        }
        self.leaf_links.clear();
        let leaves = fresh.leaves.drain(..).map(|(index, last)| Child {
            page: numbers[index],
            last,
        });
        self.leaves.extend(leaves);
        Numbered {
            pages: Arc::clone(&self.pages),
            bytes: std::mem::replace(&mut fresh.bytes, std::mem::take(&mut self.spare)),
            numbers,
        }
    }

    /// Keeps `bytes`, those of pages it numbered and that were written, for its next pages.
    pub fn reuse(&mut self, mut bytes: Vec<u8>) {
        bytes.clear();
        self.spare = bytes;
    }

    /// Writes the last leaf and the interior pages above the leaves, the top one in the
    /// root's place. A table without rows keeps the empty root SQLite made.
    pub fn finish(mut self) -> io::Result<()> {
        let Some(last) = self.last else {
            return Ok(());
        };
        if self.leaves.is_empty() && self.fresh.leaves.is_empty() {
            // Its overflow pages, if any, come first.
            self.number().write()?;
            return self.pages.write(self.root, self.leaf.bytes(TABLE_LEAF));
        }
        self.retire_leaf(last);
        self.number().write()?;
        let mut level = std::mem::take(&mut self.leaves);
        let mut interior = Page::new(self.pages.size, INTERIOR_HEADER);
        loop {
            let groups = groups(&level, self.pages.size);
            if let [all] = groups.as_slice() {
                interior.interior(&level[all.clone()]);
                return self.pages.write(self.root, interior.bytes(TABLE_INTERIOR));
            }
            let mut above = Vec::with_capacity(groups.len());
            for group in groups {
                let children = &level[group];
                interior.interior(children);
                let page = self.pages.allocate();
                self.pages.write(page, interior.bytes(TABLE_INTERIOR))?;
                let last = children.last().expect("groups are never empty").last;
                above.push(Child { page, last });
            }
            level = above;
        }
    }
}

/// A leaf that rows begin: its rows, and the overflow pages they spill to.
struct Leaf {
    rows: std::ops::Range<usize>,
    overflow: usize,
}

/// Where pages filled apart point at each other, and the leaves among them, as [`Fresh`]
/// keeps them.
#[derive(Default)]
struct Pointers {
    links: Vec<(usize, usize)>,
    leaves: Vec<(usize, i64)>,
}

/// Fills `leaves` of `rows`, each after its overflow pages, into `out`: the fresh pages
/// from index `first` on.
fn fill_pages(
    size: usize,
    rows: &[(i64, &[u8])],
    leaves: &[Leaf],
    mut out: &mut [u8],
    first: usize,
) -> Pointers {
    let mut pointers = Pointers::default();
    let mut next = first;
    for leaf in leaves {
        let (mut overflow, rest) = std::mem::take(&mut out).split_at_mut(leaf.overflow * size);
        let (bytes, rest) = rest.split_at_mut(size);
        out = rest;
        let here = next + leaf.overflow;
        let mut page = Page::over(bytes, LEAF_HEADER);
        let rows = &rows[leaf.rows.clone()];
        for &(rowid, record) in rows {
            let cell = Cell::of(size, rowid, record.len());
            if let Some(at) = put_cell(&mut page, rowid, record, cell) {
                let count = cell.overflow(size, record.len());
                let (these, more) = std::mem::take(&mut overflow).split_at_mut(count * size);
                spill(
                    size,
                    &record[cell.local..],
                    these,
                    next,
                    &mut pointers.links,
                );
                pointers.links.push((here * size + at, next));
                (overflow, next) = (more, next + count);
            }
        }
        page.bytes(TABLE_LEAF);
        let (last, _) = rows.last().expect("a leaf holds rows");
        pointers.leaves.push((here, *last));
        next = here + 1;
    }
    pointers
}

/// A row's cell on a leaf: its bytes, and those of its payload kept there, the rest
/// spilling to overflow pages (SQLite's rule for table leaves).
#[derive(Debug, Clone, Copy)]
struct Cell {
    len: usize,
    local: usize,
}

impl Cell {
    /// The cell of row `rowid` with a payload of `payload` bytes, on pages of `size` bytes
    /// (every byte usable: `Pages::open` refuses reserved bytes).
    fn of(size: usize, rowid: i64, payload: usize) -> Cell {
        let most = size - 35;
        let local = if payload <= most {
            payload
        } else {
            let least = (size - 12) * 32 / 255 - 23;
            let local = least + (payload - least) % (size - 4);
            if local <= most { local } else { least }
        };
        let pointer = if local < payload { 4 } else { 0 };
        Cell {
            len: varint_len(payload as u64) + varint_len(rowid as u64) + local + pointer,
            local,
        }
    }

    /// The overflow pages its payload of `payload` bytes spills to.
    fn overflow(self, size: usize, payload: usize) -> usize {
        overflow_pages(size, payload - self.local)
    }
}

/// Writes a row's cell to `leaf`, which has room for it; returns where on the page the
/// number of its first overflow page goes, if it spills.
fn put_cell<B: AsMut<[u8]>>(
    leaf: &mut Page<B>,
    rowid: i64,
    record: &[u8],
    cell: Cell,
) -> Option<usize> {
    let out = leaf.cell(cell.len);
    let mut at = put_varint(out, record.len() as u64);
    at += put_varint(&mut out[at..], rowid as u64);
    out[at..at + cell.local].copy_from_slice(&record[..cell.local]);
    (cell.local < record.len()).then_some(leaf.room.top + at + cell.local)
}

/// The overflow pages that `spilled` bytes of a payload take: each holds the number of the
/// next and `size - 4` bytes.
fn overflow_pages(size: usize, spilled: usize) -> usize {
    spilled.div_ceil(size - 4)
}

/// Writes `rest` of a payload over the overflow pages `out` (zeroed; fresh pages from
/// index `first` on), each page's first four bytes naming the next, which `links` records.
fn spill(size: usize, rest: &[u8], out: &mut [u8], first: usize, links: &mut Vec<(usize, usize)>) {
    let count = overflow_pages(size, rest.len());
    for (i, (chunk, page)) in rest.chunks(size - 4).zip(out.chunks_mut(size)).enumerate() {
        page[4..4 + chunk.len()].copy_from_slice(chunk);
        if i + 1 < count {
            links.push(((first + i) * size, first + i + 1));
        }
    }
}

#[cold]
fn out_of_order(rowid: i64, last: i64) -> io::Error {
    invalid(format!(
        "row {rowid} comes after row {last}: rows append in order of their ids"
    ))
}

impl Numbered {
    /// Writes the pages, each run of consecutive numbers in one call: a call a page, from
    /// every thread at once, queued them on the file's lock in the kernel (on 16 cores a
    /// replay spent as much time in the kernel as in its own code). Returns their bytes'
    /// buffer, for their table to [`AppendTable::reuse`].
    pub fn write(self) -> io::Result<Vec<u8>> {
        let size = self.pages.size;
        let mut rest = &self.numbers[..];
        let mut bytes = &self.bytes[..];
        while let Some(&first) = rest.first() {
            let run = 1
                + (rest.windows(2))
                    .take_while(|pair| pair[1] == pair[0] + 1)
                    .count();
            let (these, more) = bytes.split_at(run * size);
            self.pages.write(first, these)?;
            (rest, bytes) = (&rest[run..], more);
        }
        Ok(self.bytes)
    }
}

/// `children` split into runs that each fill an interior page: every child but a page's
/// last has a cell (its page and last rowid), the last is the page's right-most child. No
/// run is of one child, which would make a page without cells.
fn groups(children: &[Child], size: usize) -> Vec<std::ops::Range<usize>> {
    let cell = |child: &Child| 2 + 4 + varint_len(child.last as u64);
    let mut groups = Vec::new();
    let mut start = 0;
    while start < children.len() {
        let mut used = INTERIOR_HEADER;
        let mut end = start;
        while end + 1 < children.len() && used + cell(&children[end]) <= size {
            used += cell(&children[end]);
            end += 1;
        }
        groups.push(start..end + 1);
        start = end + 1;
    }
    if let [.., before, last] = groups.as_mut_slice()
        && last.len() == 1
    {
        before.end -= 1;
        last.start -= 1;
    }
    groups
}

/// Room left on a B-tree page being filled: the header and cell pointers grow from its
/// start, the cells from its end.
#[derive(Debug, Clone, Copy)]
struct Room {
    header: usize,
    cells: usize,
    /// Where the cells begin.
    top: usize,
}

impl Room {
    fn new(size: usize, header: usize) -> Room {
        Room {
            header,
            cells: 0,
            top: size,
        }
    }

    fn fits(&self, cell: usize) -> bool {
        self.header + 2 * (self.cells + 1) + cell <= self.top
    }

    /// Takes room for a cell of `len` bytes, which [`Room::fits`]; returns where its
    /// pointer goes.
    fn take(&mut self, len: usize) -> usize {
        self.top -= len;
        self.cells += 1;
        self.header + 2 * (self.cells - 1)
    }
}

/// A B-tree page being filled, in bytes of its own or in place among other pages.
struct Page<B = Vec<u8>> {
    bytes: B,
    room: Room,
}

impl Page {
    fn new(size: usize, header: usize) -> Page {
        Page::over(vec![0; size], header)
    }

    /// Fills the page with the cells of `children`, the last of them its right-most child.
    fn interior(&mut self, children: &[Child]) {
        self.clear();
        let (right, cells) = children.split_last().expect("groups are never empty");
        for child in cells {
            let mut cell = [0u8; 13];
            cell[..4].copy_from_slice(&child.page.to_be_bytes());
            let len = 4 + put_varint(&mut cell[4..], child.last as u64);
            debug_assert!(self.room.fits(len));
            self.cell(len).copy_from_slice(&cell[..len]);
        }
        self.bytes[8..12].copy_from_slice(&right.page.to_be_bytes());
    }

    fn clear(&mut self) {
        self.bytes.fill(0);
        self.room = Room::new(self.bytes.len(), self.room.header);
    }
}

impl<B: AsMut<[u8]>> Page<B> {
    /// A page over `bytes`, which must be zeroed (fresh pages are).
    fn over(mut bytes: B, header: usize) -> Page<B> {
        let room = Room::new(bytes.as_mut().len(), header);
        Page { bytes, room }
    }

    /// Room for the next cell, of `len` bytes, which fits.
    fn cell(&mut self, len: usize) -> &mut [u8] {
        let pointer = self.room.take(len);
        let top = self.room.top;
        let bytes = self.bytes.as_mut();
        bytes[pointer..pointer + 2].copy_from_slice(&(top as u16).to_be_bytes());
        &mut bytes[top..top + len]
    }

    /// The page's bytes, its header written for a page of `kind`.
    fn bytes(&mut self, kind: u8) -> &[u8] {
        let Room { cells, top, .. } = self.room;
        let bytes = self.bytes.as_mut();
        bytes[0] = kind;
        // No free blocks, no fragments; 0 stands for 65536 where the cells begin.
        bytes[1..3].fill(0);
        bytes[3..5].copy_from_slice(&(cells as u16).to_be_bytes());
        bytes[5..7].copy_from_slice(&(top as u16).to_be_bytes());
        bytes[7] = 0;
        bytes
    }
}

/// How a column converts what is stored in it, from its declared type (SQLite's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    Integer,
    Text,
    Blob,
    Real,
    Numeric,
}

impl Affinity {
    /// The affinity of a column declared of type `declared`.
    pub fn of(declared: &str) -> Affinity {
        let upper = declared.to_ascii_uppercase();
        let has = |part: &str| upper.contains(part);
        if has("INT") {
            Affinity::Integer
        } else if has("CHAR") || has("CLOB") || has("TEXT") {
            Affinity::Text
        } else if has("BLOB") || upper.trim().is_empty() {
            Affinity::Blob
        } else if has("REAL") || has("FLOA") || has("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }

    /// `value` as a column of this affinity stores it. Text that SQLite would store as a
    /// number, and numbers it would store as text, are refused rather than guessed at: the
    /// tables written here never hold them.
    #[inline]
    fn store(self, value: &Value) -> Result<Stored<'_>, Refused> {
        use Affinity::*;
        match *value {
            Value::Int(v) => match self {
                Real => Ok(Stored::Real(v as f64)),
                Text => Err(Refused),
                _ => Ok(Stored::Int(v)),
            },
            Value::Null => Ok(Stored::Null),
            Value::Str(text) => Stored::text(self, text),
            Value::Text(ref text) => Stored::text(self, text),
            Value::Real(v) => match self {
                Integer | Numeric if v == (v as i64) as f64 && v.abs() < 9.2e18 => {
                    Ok(Stored::Int(v as i64))
                }
                Text => Err(Refused),
                _ => Ok(Stored::Real(v)),
            },
        }
    }
}

/// A value that a column would store otherwise than as it is.
struct Refused;

#[cold]
fn refused(affinity: Affinity, value: &Value) -> io::Error {
    invalid(format!(
        "{value:?} in a column of {affinity:?} affinity, which would convert it"
    ))
}

/// A value as a record holds it.
#[derive(Debug, Clone, Copy)]
enum Stored<'v> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'v str),
}

impl<'v> Stored<'v> {
    #[inline]
    fn text(affinity: Affinity, text: &'v str) -> Result<Stored<'v>, Refused> {
        let numeric = !matches!(affinity, Affinity::Text | Affinity::Blob);
        // Cheap first: JSON objects are text in any column.
        let may_be_number = |t: &str| {
            let first = t.trim_start().bytes().next();
            first.is_some_and(|b| b.is_ascii_digit() || b"+-.".contains(&b))
                && t.trim().parse::<f64>().is_ok()
        };
        if numeric && may_be_number(text) {
            return Err(Refused);
        }
        Ok(Stored::Text(text))
    }

    /// The record's serial type for the value, and the bytes of its body.
    #[inline]
    fn serial(self) -> (u64, usize) {
        match self {
            Stored::Null => (0, 0),
            Stored::Int(0) => (8, 0),
            Stored::Int(1) => (9, 0),
            Stored::Int(v) => match v {
                -0x80..0x80 => (1, 1),
                -0x8000..0x8000 => (2, 2),
                -0x80_0000..0x80_0000 => (3, 3),
                -0x8000_0000..0x8000_0000 => (4, 4),
                -0x8000_0000_0000..0x8000_0000_0000 => (5, 6),
                _ => (6, 8),
            },
            Stored::Real(_) => (7, 8),
            Stored::Text(t) => (13 + 2 * t.len() as u64, t.len()),
        }
    }
}

/// Encodes rows as SQLite's records: the header's length, a serial type per value, then
/// the values. Reused from row to row.
#[derive(Default)]
pub struct Record {
    /// Two bytes for the header's length, then the serial types, then the values.
    bytes: Vec<u8>,
    values: Vec<u8>,
}

impl Record {
    /// The record of `values`, each stored as its column's affinity says.
    pub fn encode<'v>(
        &mut self,
        values: impl IntoIterator<Item = (Affinity, &'v Value)>,
    ) -> io::Result<&[u8]> {
        // Integers are written 8 bytes at a time, each over the slack the next one leaves.
        const SLACK: usize = 8;
        let (mut types, mut body) = (2, 0);
        for (affinity, value) in values {
            let value = affinity
                .store(value)
                .map_err(|Refused| refused(affinity, value))?;
            let (serial, len) = value.serial();
            if self.bytes.len() < types + 9 {
                self.bytes.resize(types + 64, 0);
            }
            types += put_varint(&mut self.bytes[types..], serial);
            if self.values.len() < body + len + SLACK {
                self.values.resize((body + len + SLACK).max(256), 0);
            }
            let out = &mut self.values[body..];
            match value {
                Stored::Int(v) if len > 0 => {
                    out[..8].copy_from_slice(&(v << (64 - 8 * len)).to_be_bytes());
                }
                Stored::Real(v) => out[..8].copy_from_slice(&v.to_bits().to_be_bytes()),
                Stored::Text(t) => out[..len].copy_from_slice(t.as_bytes()),
                Stored::Int(_) | Stored::Null => {}
            }
            body += len;
        }
        // The header's length counts the varint that says it: one byte or two, as headers
        // here are under 16 KiB.
        let types_len = types - 2;
        let start = if types_len < 0x7f {
            self.bytes[1] = (types_len + 1) as u8;
            1
        } else {
            let header = types_len + 2;
            if header >= 1 << 14 {
                return Err(invalid("a record's header of more than 16 KiB"));
            }
            put_varint(&mut self.bytes[..2], header as u64);
            0
        };
        self.bytes.truncate(types);
        self.bytes.extend_from_slice(&self.values[..body]);
        Ok(&self.bytes[start..])
    }
}

/// Bytes of SQLite's varint of `v`: 7 bits a byte, most significant first, the ninth byte
/// whole.
fn varint_len(v: u64) -> usize {
    match v {
        0..0x80 => 1,
        _ if v >> 56 != 0 => 9,
        _ => (64 - v.leading_zeros() as usize).div_ceil(7),
    }
}

/// Writes SQLite's varint of `v` at the start of `out`; returns its length.
#[inline]
fn put_varint(out: &mut [u8], v: u64) -> usize {
    if v < 0x80 {
        out[0] = v as u8;
        return 1;
    }
    put_long_varint(out, v)
}

#[cold]
fn put_long_varint(out: &mut [u8], v: u64) -> usize {
    let len = varint_len(v);
    if len == 9 {
        out[8] = v as u8;
        let mut rest = v >> 8;
        for byte in out[..8].iter_mut().rev() {
            *byte = (rest as u8 & 0x7f) | 0x80;
            rest >>= 7;
        }
        return 9;
    }
    let mut rest = v;
    for i in (0..len).rev() {
        let continued = if i + 1 < len { 0x80 } else { 0 };
        out[i] = (rest as u8 & 0x7f) | continued;
        rest >>= 7;
    }
    len
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.into())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use rusqlite::types::Value as Sql;

    use super::*;

    /// A database of small pages (so that a few thousand rows make a tree of three levels),
    /// with a table to fill and one left empty; returns the first's root page.
    fn database(path: &Path) -> u32 {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 512; PRAGMA journal_mode = OFF;
             CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL,
                             d JSONB DEFAULT '{}');
             CREATE TABLE e (id INTEGER PRIMARY KEY, x);",
        )
        .unwrap();
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    }

    /// Row `i`: every kind of value and size of integer, text long enough to spill over one
    /// or several pages, rowids far apart (9-byte varints among them).
    fn row(i: i64) -> (i64, [Value; 4]) {
        let ints = [
            0,
            1,
            -1,
            127,
            -129,
            40_000,
            -8_000_000,
            1 << 40,
            i64::MIN,
            i64::MAX,
        ];
        let text = match i % 7 {
            0 => "x".repeat(600 + i as usize % 900),
            1 => String::new(),
            _ => format!("row {i}"),
        };
        let d = if i % 5 == 0 {
            Value::Null
        } else {
            Value::Str("{\"k\":1}")
        };
        let rowid = if i < 4000 { i * 3 + 1 } else { (1 << 62) + i };
        (
            rowid,
            [
                Value::Int(ints[i as usize % ints.len()]),
                Value::Text(text),
                Value::Int(i),
                d,
            ],
        )
    }

    fn affinities() -> [Affinity; 5] {
        ["INTEGER", "INTEGER", "TEXT", "REAL", "JSONB"].map(Affinity::of)
    }

    #[test]
    fn a_table_built_from_its_pages_reads_back_whole_and_takes_more_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let root = database(&path);
        let pages = Arc::new(Pages::open(&path).unwrap());
        let mut table = AppendTable::new(Arc::clone(&pages), root);
        let mut record = Record::default();
        let rows = 5000;
        for i in 0..rows {
            let (rowid, values) = row(i);
            // The rowid's column holds NULL: the rowid is the cell's key.
            let columns = std::iter::once(&Value::Null).chain(&values);
            let bytes = record
                .encode(affinities().into_iter().zip(columns))
                .unwrap();
            table.append(rowid, bytes).unwrap();
        }
        table.finish().unwrap();
        let pages = Arc::into_inner(pages).expect("the table is finished");
        pages.close().unwrap();

        let conn = Connection::open(&path).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        // The root is an interior page over interior pages.
        let file = std::fs::read(&path).unwrap();
        let page = |n: u32| &file[(n as usize - 1) * 512..n as usize * 512];
        let right = u32::from_be_bytes(page(root)[8..12].try_into().unwrap());
        assert_eq!([page(root)[0], page(right)[0]], [TABLE_INTERIOR; 2]);
        let mut select = conn
            .prepare("SELECT id, a, b, c, d FROM t ORDER BY id")
            .unwrap();
        let read: Vec<Vec<Sql>> = select
            .query_map([], |r| (0..5).map(|i| r.get::<_, Sql>(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(read.len(), rows as usize);
        for (i, got) in (0..rows).zip(&read) {
            let (rowid, [a, b, c, d]) = row(i);
            let Value::Int(a) = a else { unreachable!() };
            let Value::Text(b) = b else { unreachable!() };
            let Value::Int(c) = c else { unreachable!() };
            let d = match d {
                Value::Str(d) => Sql::Text(d.into()),
                _ => Sql::Null,
            };
            let want = [
                Sql::Integer(rowid),
                Sql::Integer(a),
                Sql::Text(b),
                Sql::Real(c as f64),
                d,
            ];
            assert_eq!(got, &want, "row {i}");
        }
        conn.execute("INSERT INTO t (a) VALUES (7)", []).unwrap();
        conn.execute("INSERT INTO e (x) VALUES (8)", []).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "SQLite adds rows to the file as to its own");
    }

    /// How `batched` fills the tables of a batch.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Filling {
        /// The two tables on two threads, their leaves in parallel.
        Parallel,
        /// `e` before `t`, their leaves in parallel.
        InTurn,
        /// `e` before `t`, a row at a time: one after another.
        RowByRow,
    }

    /// Builds `t` with the rows of `row` and `e` with as many, in batches of runs each
    /// filled (as `filling` says), numbered and written as the rocpd sink does. Returns the
    /// file's bytes.
    fn batched(path: &Path, filling: Filling) -> Vec<u8> {
        let root = database(path);
        let conn = Connection::open(path).unwrap();
        let other: u32 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'e'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        drop(conn);
        let pages = Arc::new(Pages::open(path).unwrap());
        let mut t = AppendTable::new(Arc::clone(&pages), root);
        let mut e = AppendTable::new(Arc::clone(&pages), other);
        let mut record = Record::default();
        let mut runs = |rows: std::ops::Range<i64>, t_rows: bool| -> Vec<Records> {
            let rows: Vec<i64> = rows.collect();
            rows.chunks(300)
                .map(|run| {
                    let mut records = Records::default();
                    for &i in run {
                        let (rowid, values) = row(i);
                        let bytes = if t_rows {
                            let columns = std::iter::once(&Value::Null).chain(&values);
                            record.encode(affinities().into_iter().zip(columns))
                        } else {
                            record.encode([
                                (Affinity::Integer, &Value::Null),
                                (Affinity::Blob, &values[1]),
                            ])
                        };
                        records.push(rowid, bytes.unwrap());
                    }
                    records
                })
                .collect()
        };
        for batch in 0..5 {
            let rows = batch * 1000..(batch + 1) * 1000;
            let (of_t, of_e) = (runs(rows.clone(), true), runs(rows, false));
            let (of_t, of_e): (Vec<_>, Vec<_>) = (
                of_t.iter().flat_map(Records::iter).collect(),
                of_e.iter().flat_map(Records::iter).collect(),
            );
            match filling {
                Filling::Parallel => {
                    let (a, b) = rayon::join(|| t.fill(&of_t), || e.fill(&of_e));
                    a.unwrap();
                    b.unwrap();
                }
                Filling::InTurn => {
                    e.fill(&of_e).unwrap();
                    t.fill(&of_t).unwrap();
                }
                Filling::RowByRow => {
                    of_e.iter().for_each(|row| e.fill(&[*row]).unwrap());
                    of_t.iter().for_each(|row| t.fill(&[*row]).unwrap());
                }
            }
            let (t_pages, e_pages) = (t.number(), e.number());
            t.reuse(t_pages.write().unwrap());
            e.reuse(e_pages.write().unwrap());
        }
        t.finish().unwrap();
        e.finish().unwrap();
        Arc::into_inner(pages).unwrap().close().unwrap();
        std::fs::read(path).unwrap()
    }

    #[test]
    fn tables_filled_in_batches_on_any_threads_make_the_same_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
        let parallel = batched(&a, Filling::Parallel);
        for filling in [Filling::InTurn, Filling::RowByRow] {
            assert!(
                parallel == batched(&b, filling),
                "the same bytes {filling:?}"
            );
            std::fs::remove_file(&b).unwrap();
        }
        let conn = Connection::open(&a).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let texts: Vec<(i64, String)> = conn
            .prepare("SELECT id, b FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let want: Vec<(i64, String)> = (0..5000)
            .map(|i| match row(i) {
                (rowid, [_, Value::Text(b), ..]) => (rowid, b),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            texts, want,
            "long texts spill over pages numbered in later batches"
        );
        let count: i64 = conn
            .query_row("SELECT count(*) FROM e", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 5000);
    }

    #[test]
    fn one_leaf_of_rows_is_the_root_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let root = database(&path);
        let before = std::fs::metadata(&path).unwrap().len();
        let pages = Arc::new(Pages::open(&path).unwrap());
        let mut table = AppendTable::new(Arc::clone(&pages), root);
        let mut record = Record::default();
        let values = [
            Value::Null,
            Value::Int(5),
            Value::Str("five"),
            Value::Real(0.5),
            Value::Null,
        ];
        let bytes = record
            .encode(affinities().into_iter().zip(&values))
            .unwrap();
        table.append(9, bytes).unwrap();
        table.finish().unwrap();
        Arc::into_inner(pages).unwrap().close().unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            before,
            "no page added"
        );
        let conn = Connection::open(&path).unwrap();
        let row: (i64, i64, String, f64) = conn
            .query_row("SELECT id, a, b, c FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        assert_eq!(row, (9, 5, "five".into(), 0.5));
    }

    #[test]
    fn rows_out_of_order_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let root = database(&path);
        let mut table = AppendTable::new(Arc::new(Pages::open(&path).unwrap()), root);
        let mut record = Record::default();
        let bytes = record
            .encode([(Affinity::Integer, &Value::Int(1))])
            .unwrap()
            .to_vec();
        table.append(2, &bytes).unwrap();
        let error = table.append(2, &bytes).unwrap_err();
        assert!(
            error.to_string().contains("in order of their ids"),
            "{error}"
        );
        // Rows filled at once are shared out among leaves before any is filled.
        let rows: Vec<_> = (3..2000).chain([1000]).map(|id| (id, &bytes[..])).collect();
        let error = table.fill(&rows).unwrap_err();
        assert!(
            error.to_string().contains("row 1000 comes after row 1999"),
            "{error}"
        );
    }

    #[test]
    fn the_lock_page_is_never_given_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        database(&path);
        let pages = Pages::open(&path).unwrap();
        // 1 GiB in pages of 512 bytes, plus the page that holds the byte.
        let lock = (1 << 21) + 1;
        assert_eq!(lock_page(512), lock);
        pages.last.store(lock - 2, Ordering::Relaxed);
        let given: Vec<u32> = (0..3).map(|_| pages.allocate()).collect();
        assert_eq!(given, [lock - 1, lock + 1, lock + 2]);
    }

    #[test]
    fn interior_pages_hold_what_fits_and_none_holds_a_single_child() {
        let children = |n: i64| -> Vec<Child> {
            (0..n)
                .map(|i| Child {
                    page: i as u32 + 2,
                    last: 200 + i,
                })
                .collect()
        };
        // A 512-byte page holds 12 header bytes and cells of 8 bytes (2 of pointer, 4 of
        // page, 2 of rowid): 62 cells and a right-most child, 63 children.
        let fits = groups(&children(126), 512);
        assert_eq!(fits, [0..63, 63..126]);
        // One child more would be alone on a page: the page before gives it company.
        let odd = groups(&children(127), 512);
        assert_eq!(odd, [0..63, 63..125, 125..127]);
        let lone = std::ops::Range { start: 0, end: 1 };
        assert_eq!(
            groups(&children(1), 512),
            [lone],
            "a lone child is the root's"
        );
    }

    #[test]
    fn a_file_that_is_not_a_whole_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, vec![b'x'; 200]).unwrap();
        let error = Pages::open(&text).err().expect("refused");
        assert!(
            error.to_string().contains("not a SQLite database"),
            "{error}"
        );

        let path = dir.path().join("t.db");
        database(&path);
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        file.write_all_at(&[0; 100], std::fs::metadata(&path).unwrap().len())
            .unwrap();
        let error = Pages::open(&path).err().expect("refused");
        assert!(error.to_string().contains("size differs"), "{error}");
    }

    #[test]
    fn varints_are_sqlites() {
        let encoded = |v: u64| {
            let mut out = [0u8; 9];
            let n = put_varint(&mut out, v);
            assert_eq!(n, varint_len(v));
            out[..n].to_vec()
        };
        assert_eq!(encoded(0x7f), [0x7f]);
        assert_eq!(encoded(0x80), [0x81, 0x00]);
        assert_eq!(encoded(0x3fff), [0xff, 0x7f]);
        assert_eq!(
            encoded(1 << 56),
            [0x80, 0xc0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]
        );
        assert_eq!(encoded(u64::MAX), [0xff; 9]);
    }

    #[test]
    fn values_are_stored_as_their_columns_convert_them_or_refused() {
        let kinds = [
            "BIGINT",
            "TEXT",
            "JSONB",
            "REAL",
            "",
            "VARCHAR(8)",
            "DOUBLE",
        ];
        use Affinity::*;
        assert_eq!(
            kinds.map(Affinity::of),
            [Integer, Text, Numeric, Real, Blob, Text, Real]
        );
        assert!(matches!(Real.store(&Value::Int(2)), Ok(Stored::Real(2.0))));
        assert!(matches!(
            Integer.store(&Value::Real(3.0)),
            Ok(Stored::Int(3))
        ));
        assert!(matches!(
            Numeric.store(&Value::Str("{}")),
            Ok(Stored::Text("{}"))
        ));
        assert!(
            Numeric.store(&Value::Str(" 12 ")).is_err(),
            "SQLite would store 12"
        );
        assert!(
            Text.store(&Value::Int(12)).is_err(),
            "SQLite would store '12'"
        );
    }
}
