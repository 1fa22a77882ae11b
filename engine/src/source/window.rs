//! A time window over any source, as rocpd's tools offer one: records between `--start`
//! and `--end` (nanoseconds on the run's clock, or a percentage of the run's span), or
//! within the first marker range of a name. A record partly inside is kept with
//! `--inclusive`, dropped without. Metadata passes whole, so records keep their names.
//!
//! A window of percentages or of a marker depends on the run, which is read once first
//! to find it.

use crate::catalog::{Catalog, MarkerMessages};
use crate::column::{BatchVisitor, Columns, visit};
use crate::record::{Batch, Marker, Value};
use crate::wire::{Frame, Payload};

use super::{Ending, Source, SourceError};

/// One end of a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Nanoseconds on the run's clock.
    Ns(u64),
    /// A fraction (0 to 1) of the run's span, from its first record's start.
    Share(f64),
}

/// Why a window cannot be taken; each variant holds what it is about.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error("`{0}`: a percentage is 0% to 100%")]
    Percentage(String),
    #[error("`{0}`: give nanoseconds on the run's clock, or a percentage such as 25%")]
    NotABound(String),
    #[error("no marker range named `{0}` in the run")]
    NoMarker(String),
    #[error("the run holds no records to take a window of")]
    NoRecords,
    #[error("the window ends ({end} ns) before it starts ({start} ns)")]
    Backwards { start: u64, end: u64 },
    /// Reading the run to find the window failed.
    #[error(transparent)]
    Source(#[from] SourceError),
}

fn bound(text: &str) -> Result<Bound, WindowError> {
    match text.strip_suffix('%') {
        Some(percent) => match percent.trim().parse::<f64>() {
            Ok(p) if (0.0..=100.0).contains(&p) => Ok(Bound::Share(p / 100.0)),
            _ => Err(WindowError::Percentage(text.into())),
        },
        None => {
            (text.trim().parse().map(Bound::Ns)).map_err(|_| WindowError::NotABound(text.into()))
        }
    }
}

/// The window options of the commands that read a run.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct WindowArgs {
    /// Only records from this time: nanoseconds on the run's clock, or a percentage of
    /// the run's span (25%).
    #[arg(long, value_parser = bound, value_name = "NS|PERCENT")]
    start: Option<Bound>,
    /// Only records until this time (as --start).
    #[arg(long, value_parser = bound, value_name = "NS|PERCENT")]
    end: Option<Bound>,
    /// Only records within the first marker range with this message.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["start", "end"])]
    window_marker: Option<String>,
    /// Keep records partly inside the window (without it, only those wholly inside).
    #[arg(long)]
    inclusive: bool,
}

impl WindowArgs {
    fn is_set(&self) -> bool {
        self.start.is_some() || self.end.is_some() || self.window_marker.is_some()
    }

    /// A source from `open`, in the window if one is set: a window that depends on the
    /// run reads a first source from `open` to find it. `error` words what cannot be.
    pub fn apply<E>(
        &self,
        mut open: impl FnMut() -> Result<Box<dyn Source>, E>,
        error: impl Fn(WindowError) -> E,
    ) -> Result<Box<dyn Source>, E> {
        if !self.is_set() {
            return open();
        }
        let shares = [self.start, self.end]
            .iter()
            .any(|b| matches!(b, Some(Bound::Share(_))));
        let range = if self.window_marker.is_none() && !shares {
            let ns = |b: Option<Bound>, default| match b {
                Some(Bound::Ns(ns)) => ns,
                _ => default,
            };
            (ns(self.start, 0), ns(self.end, u64::MAX))
        } else {
            let mut first = open()?;
            let run = Survey::of(&mut *first, self.window_marker.as_deref());
            first.finish().map_err(|e| error(e.into()))?;
            self.resolve(&run).map_err(&error)?
        };
        if range.0 > range.1 {
            return Err(error(WindowError::Backwards {
                start: range.0,
                end: range.1,
            }));
        }
        Ok(Box::new(Window {
            inner: open()?,
            range,
            inclusive: self.inclusive,
        }))
    }

    /// The window in nanoseconds, given what the run holds.
    fn resolve(&self, run: &Survey) -> Result<(u64, u64), WindowError> {
        if let Some(name) = &self.window_marker {
            return (run.marker).ok_or_else(|| WindowError::NoMarker(name.clone()));
        }
        let (first, last) = run.span.ok_or(WindowError::NoRecords)?;
        let at = |b: Option<Bound>, default: u64| match b {
            None => default,
            Some(Bound::Ns(ns)) => ns,
            Some(Bound::Share(share)) => first + ((last - first) as f64 * share).round() as u64,
        };
        Ok((at(self.start, first), at(self.end, last)))
    }
}

/// What a window needs to know of a run: its span, and the first marker range of a name.
#[derive(Debug, Default)]
struct Survey {
    span: Option<(u64, u64)>,
    marker: Option<(u64, u64)>,
}

impl Survey {
    fn of(source: &mut dyn Source, marker: Option<&str>) -> Survey {
        let mut survey = Survey::default();
        let mut catalog = Catalog::default();
        // A run's markers are named as the stages name them: a live run's (and its
        // spool's) records carry no message, which comes in metadata before them.
        let mut messages = MarkerMessages::default();
        while let Some(frame) = source.next_frame() {
            match frame.payload {
                Payload::Meta(mut items) => {
                    messages.take(frame.stream, &mut items);
                    catalog.apply(frame.stream, items);
                }
                Payload::Args(_) | Payload::Trace(_) => {}
                Payload::Records(mut batch) => {
                    if let Batch::Marker(markers) = &mut batch {
                        messages.name(frame.stream, markers);
                    }
                    for (start, end) in spans(&batch) {
                        let (first, last) = survey.span.unwrap_or((start, end));
                        survey.span = Some((first.min(start), last.max(end)));
                    }
                    if let (Some(name), Batch::Marker(markers)) = (marker, &batch) {
                        let meta = catalog.stream(frame.stream);
                        let named =
                            |m: &&Marker| m.end_ns > m.start_ns && meta.string(m.message) == name;
                        for m in markers.iter().filter(named) {
                            if survey.marker.is_none_or(|(s, _)| m.start_ns < s) {
                                survey.marker = Some((m.start_ns, m.end_ns));
                            }
                        }
                    }
                }
            }
        }
        survey
    }
}

/// Each record's span: its start to its end (an instant's end is its start).
fn spans(batch: &Batch) -> Vec<(u64, u64)> {
    struct Spans;
    impl BatchVisitor for Spans {
        type Output = Vec<(u64, u64)>;
        fn visit<R: Columns>(self, records: &[R]) -> Self::Output {
            records
                .iter()
                .map(|r| {
                    let start = r.start_ns();
                    match r.field("end_ns") {
                        Some(Value::Int(end)) => (start, (end as u64).max(start)),
                        _ => (start, start),
                    }
                })
                .collect()
        }
    }
    visit(batch, Spans)
}

/// A source's records within `range`.
struct Window {
    inner: Box<dyn Source>,
    range: (u64, u64),
    inclusive: bool,
}

impl Source for Window {
    fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let mut frame = self.inner.next_frame()?;
            let Payload::Records(batch) = &mut frame.payload else {
                return Some(frame);
            };
            let (from, to) = self.range;
            let keep: Vec<bool> = spans(batch)
                .into_iter()
                .map(|(start, end)| match self.inclusive {
                    true => start <= to && end >= from,
                    false => start >= from && end <= to,
                })
                .collect();
            batch.retain_indexed(|i| keep[i]);
            if !batch.is_empty() {
                return Some(frame);
            }
        }
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        self.inner.finish()
    }
}
