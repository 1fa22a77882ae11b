//! What a person sees on stderr while a run or a replay goes on: the records coming in
//! and their rate, then each sink's records written and the time left while the outputs
//! finish, then the post-steps. On a terminal these are indicatif's bars, redrawn in place;
//! elsewhere (a log, a pipe) a few plain lines, one as each part ends; with `--quiet`,
//! nothing.
//!
//! Whoever does the work fills a [`Board`] (counters and states, no drawing): the runner
//! says how many records arrived, the stages what each sink took and wrote, the post-steps
//! when each starts and ends. A [`Display`] reads it on a thread of its own and draws.
//! The bars are put on the screen (`screen.rs`), through which messages ([`crate::messages`]) are
//! written, so that they print above the bars instead of through them.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{HumanCount, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::messages::{self, Level, Message};
use crate::screen;
use crate::sink::Written;

/// How progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Bars redrawn in place (stderr is a terminal).
    Bars,
    /// Plain lines, one as each part of the work ends.
    Lines,
    /// Nothing (`--quiet`).
    Quiet,
}

impl Mode {
    /// Bars on a terminal, lines elsewhere, nothing when `quiet`.
    pub fn for_stderr(quiet: bool) -> Mode {
        match (quiet, std::io::stderr().is_terminal()) {
            (true, _) => Mode::Quiet,
            (false, true) => Mode::Bars,
            (false, false) => Mode::Lines,
        }
    }
}

/// Records that have come in, and from how many processes (`None` for a spool or
/// databases, which have no live processes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Incoming {
    pub records: u64,
    pub processes: Option<u64>,
}

/// Counts the records arriving, for a live run (see [`Board::count_incoming`]).
type Counter = Box<dyn Fn() -> Incoming + Send + Sync>;

/// The state of the work, as the parts doing it report it.
pub struct Board {
    started: Instant,
    /// Records arrive from processes (a run), rather than from a spool or databases.
    live: bool,
    /// Records the stages took from their source.
    decoded: AtomicU64,
    /// What the runner counts as records arrive; without it, the records decoded.
    incoming: OnceLock<Counter>,
    /// When the source's records ended.
    input_ended: OnceLock<Instant>,
    /// When the application exited, until it starts again for a run's next pass: its
    /// records may reach the stages later, while slow sinks catch up.
    exited: Mutex<Option<Instant>>,
    sinks: Mutex<Vec<Arc<SinkProgress>>>,
    steps: Mutex<Vec<Arc<StepProgress>>>,
}

impl Default for Board {
    fn default() -> Board {
        Board {
            started: Instant::now(),
            live: false,
            decoded: AtomicU64::new(0),
            incoming: OnceLock::new(),
            input_ended: OnceLock::new(),
            exited: Mutex::default(),
            sinks: Mutex::default(),
            steps: Mutex::default(),
        }
    }
}

impl Board {
    /// The board of a run, whose records arrive from processes (see
    /// [`Board::count_incoming`]).
    pub fn live() -> Board {
        Board {
            live: true,
            ..Board::default()
        }
    }

    /// Counts the records that arrive with `counter` instead of those decoded: a live run
    /// receives records before the stages decode them.
    pub fn count_incoming(&self, counter: impl Fn() -> Incoming + Send + Sync + 'static) {
        let _ = self.incoming.set(Box::new(counter));
    }

    /// `records` more were decoded.
    pub fn decoded(&self, records: u64) {
        self.decoded.fetch_add(records, Ordering::Relaxed);
    }

    /// The source has no more records.
    pub fn input_ended(&self) {
        let _ = self.input_ended.set(Instant::now());
    }

    /// The application exited.
    pub fn application_exited(&self) {
        *self.exited.lock().expect("no poison") = Some(Instant::now());
    }

    /// The application starts again, for a run's next pass.
    pub fn application_started(&self) {
        *self.exited.lock().expect("no poison") = None;
    }

    /// A sink the stages will write, in the plan's order.
    pub fn sink(&self, name: &str) -> Arc<SinkProgress> {
        let sink = Arc::new(SinkProgress {
            name: name.to_owned(),
            handed: AtomicU64::new(0),
            written: OnceLock::new(),
            state: AtomicU8::new(SinkState::Writing as u8),
            ended: OnceLock::new(),
        });
        self.sinks
            .lock()
            .expect("no poison")
            .push(Arc::clone(&sink));
        sink
    }

    /// A post-step starts; it has ended when the returned value is dropped.
    pub fn step(&self, name: &str) -> StepGuard {
        let step = Arc::new(StepProgress {
            name: name.to_owned(),
            started: Instant::now(),
            ended: OnceLock::new(),
        });
        self.steps
            .lock()
            .expect("no poison")
            .push(Arc::clone(&step));
        StepGuard(step)
    }

    fn incoming(&self) -> Incoming {
        match self.incoming.get() {
            Some(counter) => counter(),
            None => Incoming {
                records: self.decoded.load(Ordering::Relaxed),
                processes: self.live.then_some(0),
            },
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            incoming: self.incoming(),
            decoded: self.decoded.load(Ordering::Relaxed),
            elapsed: self.started.elapsed(),
            input_ended: self.input_ended.get().map(|t| *t - self.started),
            exited: self
                .exited
                .lock()
                .expect("no poison")
                .map(|t| t - self.started),
            sinks: (self.sinks.lock().expect("no poison").iter())
                .map(|s| s.snapshot(self.started))
                .collect(),
            steps: (self.steps.lock().expect("no poison").iter())
                .map(|s| {
                    (
                        s.name.clone(),
                        s.started - self.started,
                        s.ended.get().copied(),
                    )
                })
                .collect(),
        }
    }
}

/// One sink's progress: records handed to it, records in its output, and where it is.
pub struct SinkProgress {
    name: String,
    handed: AtomicU64,
    /// The sink's own count of records in its output, if it keeps one (see
    /// [`crate::sink::Sink::written`]); without it, the records handed are written.
    written: OnceLock<Written>,
    state: AtomicU8,
    ended: OnceLock<Instant>,
}

/// Where a sink is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SinkState {
    Writing,
    /// Completing its output once its records have ended.
    Finishing,
    Done,
    /// Ended without an output: no process sent anything.
    Unopened,
    Failed,
}

impl SinkProgress {
    /// `records` more were handed to the sink.
    pub fn handed(&self, records: u64) {
        self.handed.fetch_add(records, Ordering::Relaxed);
    }

    /// The sink counts the records in its output itself.
    pub fn counted_by(&self, written: Written) {
        let _ = self.written.set(written);
    }

    pub fn set(&self, state: SinkState) {
        self.state.store(state as u8, Ordering::Relaxed);
        if !matches!(state, SinkState::Writing | SinkState::Finishing) {
            let _ = self.ended.set(Instant::now());
        }
    }

    fn snapshot(&self, origin: Instant) -> SinkSnapshot {
        let handed = self.handed.load(Ordering::Relaxed);
        let state = match self.state.load(Ordering::Relaxed) {
            0 => SinkState::Writing,
            1 => SinkState::Finishing,
            2 => SinkState::Done,
            3 => SinkState::Unopened,
            _ => SinkState::Failed,
        };
        SinkSnapshot {
            name: self.name.clone(),
            handed,
            written: self.written.get().map_or(handed, |w| w.get().min(handed)),
            state,
            ended: self.ended.get().map(|t| *t - origin),
        }
    }
}

/// A post-step under way.
struct StepProgress {
    name: String,
    started: Instant,
    ended: OnceLock<Duration>,
}

/// Ends its post-step when dropped.
pub struct StepGuard(Arc<StepProgress>);

impl Drop for StepGuard {
    fn drop(&mut self) {
        let _ = self.0.ended.set(self.0.started.elapsed());
    }
}

/// The board at one moment; times are from the board's start.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    incoming: Incoming,
    decoded: u64,
    elapsed: Duration,
    input_ended: Option<Duration>,
    exited: Option<Duration>,
    sinks: Vec<SinkSnapshot>,
    /// Name, start, and how long it took once it ended.
    steps: Vec<(String, Duration, Option<Duration>)>,
}

#[derive(Debug, Clone, PartialEq)]
struct SinkSnapshot {
    name: String,
    handed: u64,
    written: u64,
    state: SinkState,
    ended: Option<Duration>,
}

impl SinkSnapshot {
    /// How the sink ended, `ended` into the work.
    fn outcome(&self, ended: Duration) -> String {
        match self.state {
            SinkState::Failed => format!("failed after {}", seconds(ended)),
            SinkState::Unopened => "nothing to write".into(),
            _ => format!("{} records written in {}", self.handed, seconds(ended)),
        }
    }
}

impl Snapshot {
    /// What the input's end says: the records and where from, and, for a run, when its
    /// application exited (the stages take its last records later where sinks lag).
    fn input_line(&self, ended: Duration) -> String {
        let Incoming { records, processes } = self.incoming;
        let mut line = match processes {
            Some(n) => format!("received {records} records from {n} process{}", plural(n)),
            None => format!("read {records} records"),
        };
        line.push_str(&format!(" in {}", seconds(ended)));
        if let Some(exited) = self.exited {
            line.push_str(&format!(
                " (the application exited after {})",
                seconds(exited)
            ));
        }
        line
    }

    /// Where the stages are once the application has exited and they still take its
    /// records (slow sinks catching up, the frames waiting on disk).
    fn catching_up(&self) -> Option<String> {
        let exited = self.exited?;
        Some(format!(
            "the application exited after {}; the stages have taken {} of its {} records",
            seconds(exited),
            self.decoded,
            self.incoming.records
        ))
    }
}

/// Draws a board on a thread of its own until [`Display::finish`].
pub struct Display {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// How often the bars are redrawn, and the lines checked for something to say.
const TICK: Duration = Duration::from_millis(100);
/// How often a plain line says how a long part is going.
const HEARTBEAT: Duration = Duration::from_secs(10);

impl Display {
    pub fn start(mode: Mode, board: Arc<Board>) -> Display {
        let stop = Arc::new(AtomicBool::new(false));
        let mut view: Box<dyn View> = match mode {
            Mode::Quiet => {
                return Display { stop, thread: None };
            }
            Mode::Bars => Box::new(Bars::new()),
            Mode::Lines => Box::new(Lines::default()),
        };
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    view.show(&board.snapshot());
                    // Woken early when the display stops: the run does not wait a tick.
                    std::thread::park_timeout(TICK);
                }
                view.show(&board.snapshot());
                view.close();
            })
        };
        Display {
            stop,
            thread: Some(thread),
        }
    }

    /// Draws the last state and stops drawing, as dropping it does.
    pub fn finish(self) {}
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// A way of showing the board.
trait View: Send {
    fn show(&mut self, now: &Snapshot);
    fn close(&mut self) {}
}

/// indicatif's bars: the records coming in, then a bar per sink, then a line per step.
/// A part that ended stays as a line saying how it went; the bars are finished together
/// at the end (indicatif draws a finished bar above new ones more than once).
struct Bars {
    screen: MultiProgress,
    incoming: Option<Line>,
    sinks: Vec<Line>,
    steps: Vec<Line>,
}

/// A bar, and whether its part ended (it then shows a fixed line).
struct Line {
    bar: ProgressBar,
    ended: bool,
}

impl Line {
    fn new(screen: &MultiProgress, bar: ProgressBar) -> Line {
        Line {
            bar: screen.add(bar),
            ended: false,
        }
    }

    /// Shows `text` in place of the bar from now on.
    fn end(&mut self, text: String) {
        self.bar.set_style(style("  {msg}"));
        self.bar.set_message(text);
        self.ended = true;
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the templates are valid")
        .progress_chars("=> ")
}

impl Bars {
    fn new() -> Bars {
        let screen = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
        screen::show(screen.clone());
        Bars {
            screen,
            incoming: None,
            sinks: Vec::new(),
            steps: Vec::new(),
        }
    }
}

impl View for Bars {
    fn show(&mut self, now: &Snapshot) {
        let Incoming { records, processes } = now.incoming;
        let incoming = self.incoming.get_or_insert_with(|| {
            let bar = ProgressBar::new_spinner().with_style(style(
                "{spinner} {prefix} {human_pos} records{msg} {elapsed}",
            ));
            Line::new(&self.screen, bar)
        });
        let from =
            processes.map_or_else(String::new, |n| format!(" from {n} process{}", plural(n)));
        match now.input_ended {
            _ if incoming.ended => {}
            Some(at) => incoming.end(now.input_line(at)),
            None if let Some(exited) = now.exited => {
                incoming.bar.set_prefix("taking");
                incoming.bar.set_position(now.decoded);
                incoming.bar.set_message(format!(
                    " of {} (the application exited after {})",
                    HumanCount(records),
                    seconds(exited)
                ));
                incoming.bar.tick();
            }
            None => {
                let verb = if processes.is_some() {
                    "receiving"
                } else {
                    "reading"
                };
                let rate = records as f64 / now.elapsed.as_secs_f64().max(1e-3);
                incoming.bar.set_prefix(verb);
                incoming.bar.set_position(records);
                incoming
                    .bar
                    .set_message(format!("{from}, {}/s", HumanCount(rate as u64)));
                incoming.bar.tick();
            }
        }
        if now.input_ended.is_some() {
            for (i, sink) in now.sinks.iter().enumerate() {
                if self.sinks.len() == i {
                    let bar = ProgressBar::new(0)
                        .with_style(style(
                            "{spinner} {prefix:12} [{bar:30}] {human_pos}/{human_len} records written, {eta} left{msg}",
                        ))
                        .with_prefix(sink.name.clone());
                    self.sinks.push(Line::new(&self.screen, bar));
                }
                let line = &mut self.sinks[i];
                if line.ended {
                    continue;
                }
                line.bar.set_length(sink.handed);
                line.bar.set_position(sink.written);
                match (sink.state, sink.ended) {
                    (SinkState::Finishing, _) => line.bar.set_message(", finishing"),
                    (_, Some(ended)) => {
                        line.end(format!("{:12} {}", sink.name, sink.outcome(ended)))
                    }
                    _ => line.bar.tick(),
                }
            }
        }
        for (i, (name, _, ended)) in now.steps.iter().enumerate() {
            if self.steps.len() == i {
                let bar = ProgressBar::new_spinner()
                    .with_style(style("{spinner} {prefix:12} running {elapsed}"))
                    .with_prefix(name.clone());
                self.steps.push(Line::new(&self.screen, bar));
            }
            let line = &mut self.steps[i];
            match ended {
                _ if line.ended => {}
                Some(took) => line.end(format!("{name:12} done in {}", seconds(*took))),
                None => line.bar.tick(),
            }
        }
    }

    /// Leaves every line on screen: how long each part took.
    fn close(&mut self) {
        screen::clear();
        let lines = self.incoming.iter().chain(&self.sinks).chain(&self.steps);
        for line in lines {
            line.bar.finish();
        }
    }
}

/// Plain lines: one when the records end, one as each sink and step ends, and one every
/// [`HEARTBEAT`] while a part goes on long.
#[derive(Default)]
struct Lines {
    input_said: bool,
    sinks_said: usize,
    steps_said: usize,
    /// When a line last said how things go.
    last: Duration,
}

impl View for Lines {
    fn show(&mut self, now: &Snapshot) {
        let say = |text: String| messages::emit(&Message::new(Level::Progress, text));
        let Incoming { records, processes } = now.incoming;
        let from = |n: u64| format!(" from {n} process{}", plural(n));
        let verb = if processes.is_some() {
            "received"
        } else {
            "read"
        };
        match now.input_ended {
            None if now.elapsed >= self.last + HEARTBEAT => {
                let rate = records as f64 / now.elapsed.as_secs_f64().max(1e-9);
                say(now.catching_up().unwrap_or_else(|| {
                    format!(
                        "{verb} {records} records so far{}, {rate:.0}/s",
                        processes.map_or_else(String::new, from)
                    )
                }));
                self.last = now.elapsed;
            }
            None => {}
            Some(at) if !self.input_said => {
                say(now.input_line(at));
                self.input_said = true;
                self.last = now.elapsed;
            }
            Some(_) => {}
        }
        if !self.input_said {
            return;
        }
        // In the plan's order: a sink that ends before an earlier one waits for it.
        while let Some(sink) = now.sinks.get(self.sinks_said) {
            let Some(ended) = sink.ended else { break };
            say(format!("sink `{}`: {}", sink.name, sink.outcome(ended)));
            self.sinks_said += 1;
            self.last = now.elapsed;
        }
        let writing: Vec<String> = (now.sinks.iter())
            .filter(|s| s.ended.is_none())
            .map(|s| format!("`{}` {} records", s.name, s.written))
            .collect();
        if !writing.is_empty() && now.elapsed >= self.last + HEARTBEAT {
            say(format!("writing: {}", writing.join(", ")));
            self.last = now.elapsed;
        }
        while let Some((name, _, Some(took))) = now.steps.get(self.steps_said) {
            say(format!("post-step `{name}` done in {}", seconds(*took)));
            self.steps_said += 1;
            self.last = now.elapsed;
        }
        if let Some((name, started, None)) = now.steps.get(self.steps_said)
            && now.elapsed >= self.last + HEARTBEAT
        {
            let running = now.elapsed.saturating_sub(*started);
            say(format!(
                "post-step `{name}` running for {}",
                seconds(running)
            ));
            self.last = now.elapsed;
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "es" }
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines say each part once, in order, whatever the order the sinks end in.
    #[test]
    fn plain_lines_say_each_part_once_in_the_plans_order() {
        let board = Board::default();
        let (a, b) = (board.sink("a"), board.sink("b"));
        a.handed(5);
        b.handed(7);
        board.decoded(12);
        let mut lines = Lines::default();
        lines.show(&board.snapshot());
        assert!(!lines.input_said);
        board.input_ended();
        b.set(SinkState::Done);
        lines.show(&board.snapshot());
        assert!(lines.input_said);
        assert_eq!(lines.sinks_said, 0, "`b` waits for `a`");
        a.set(SinkState::Failed);
        lines.show(&board.snapshot());
        lines.show(&board.snapshot());
        assert_eq!(lines.sinks_said, 2);
        drop(board.step("summary"));
        lines.show(&board.snapshot());
        assert_eq!(lines.steps_said, 1);
    }

    /// A sink that counts what it wrote shows that count, never more than it took.
    #[test]
    fn a_sink_that_counts_shows_its_own_count() {
        let board = Board::default();
        let sink = board.sink("rocpd");
        sink.handed(10);
        let written = Written::default();
        sink.counted_by(written.clone());
        written.add(4);
        assert_eq!(board.snapshot().sinks[0].written, 4);
        written.add(20);
        assert_eq!(board.snapshot().sinks[0].written, 10);
    }

    /// Once the application has exited, while the stages still take its records, the
    /// board says when it exited and how far the stages are; the input's line says when
    /// it exited too.
    #[test]
    fn a_run_whose_stages_lag_says_when_its_application_exited() {
        let board = Board::live();
        board.count_incoming(|| Incoming {
            records: 100,
            processes: Some(1),
        });
        board.decoded(40);
        assert_eq!(
            board.snapshot().catching_up(),
            None,
            "the application still runs"
        );
        board.application_exited();
        board.application_started();
        assert_eq!(board.snapshot().catching_up(), None, "a next pass runs");
        board.application_exited();
        let now = board.snapshot();
        let exited = seconds(now.exited.unwrap());
        assert_eq!(
            now.catching_up().unwrap(),
            format!(
                "the application exited after {exited}; the stages have taken 40 of its 100 records"
            )
        );
        board.input_ended();
        let now = board.snapshot();
        assert_eq!(
            now.input_line(now.input_ended.unwrap()),
            format!(
                "received 100 records from 1 process in {} (the application exited after {exited})",
                seconds(now.input_ended.unwrap())
            )
        );
    }
}
