//! Sampled counters as the outputs draw them: per agent, counter and time, the values of
//! a sample's places (dimension instances, SPM's XCCs, shader engines and instances)
//! summed. Device counter reads and SPM samples are both such series. The CSV table's
//! rows are held to the truth ([`super::device`], [`super::spm`]); every other output that
//! shows the samples must show the CSV's series.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Rows;

/// Per agent, counter and time: the sample's values summed over its places.
pub type Series = BTreeMap<(u32, String, u64), f64>;

/// A kind of sampled counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampled {
    /// Device counter reads (`[context.device_counters]`).
    Device,
    /// SPM samples of dispatches (`[context.spm]`).
    Spm,
}

impl Sampled {
    /// The record kind: its CSV table and Parquet folder.
    pub fn table(self) -> &'static str {
        match self {
            Sampled::Device => "device_counter_sample",
            Sampled::Spm => "spm_sample",
        }
    }

    /// How a Perfetto counter track of the kind's counter ends.
    fn perfetto_suffix(self) -> &'static str {
        match self {
            Sampled::Device => " (device)",
            Sampled::Spm => " (SPM)",
        }
    }

    /// How a rocpd track of the kind names an agent before its number.
    fn rocpd_prefix(self) -> &'static str {
        match self {
            Sampled::Device => "DEVICE_COUNTING agent ",
            Sampled::Spm => "SPM agent ",
        }
    }
}

/// The series of a CSV (or Parquet) table's rows.
pub fn csv(rows: &Rows) -> Series {
    let mut sums = Series::new();
    for row in rows {
        let key = (
            row["agent"].parse().unwrap(),
            row["counter"].clone(),
            row["timestamp_ns"].parse().unwrap(),
        );
        *sums.entry(key).or_default() += row["value"].parse::<f64>().unwrap();
    }
    sums
}

/// The series of the Parquet sink that wrote to `dir`, read back through DuckDB.
pub fn parquet(dir: &Path, kind: Sampled) -> Series {
    let query = format!(
        "SELECT agent, epoch_ns(timestamp_ns), counter, value FROM '{}/*.parquet'",
        kind.table()
    );
    let rows = crate::duckdb(dir, &[&query]);
    let mut sums = Series::new();
    for row in &rows[0] {
        let int = |i: usize| row[i].as_u64().unwrap_or_else(|| panic!("{row:?}"));
        let key = (int(0) as u32, row[2].as_str().unwrap().to_owned(), int(1));
        *sums.entry(key).or_default() += row[3].as_f64().unwrap();
    }
    sums
}

/// The series of Perfetto traces, decoded with the official schema: a counter track per
/// GPU and counter, under the GPU's group (`GPU N: …`), a value per sample time.
pub fn perfetto(files: &[PathBuf], kind: Sampled) -> Series {
    let mut sums = Series::new();
    for decoded in crate::decode_perfetto(files) {
        let tracks = decoded["tracks"].as_object().unwrap();
        for event in decoded["events"].as_array().unwrap() {
            let track = &tracks[&event["track"].as_u64().unwrap().to_string()];
            let Some(name) =
                (track["name"].as_str()).and_then(|n| n.strip_suffix(kind.perfetto_suffix()))
            else {
                continue;
            };
            assert_eq!(track["counter"], true, "{track}");
            let group = &tracks[&track["parent"].as_u64().unwrap().to_string()];
            let group = group["name"].as_str().unwrap();
            let agent = group[4..group.find(':').unwrap()].parse().unwrap();
            let key = (agent, name.to_owned(), event["ts"].as_u64().unwrap());
            *sums.entry(key).or_default() += event["value"].as_f64().unwrap();
        }
    }
    sums
}

/// The series of rocpd databases: a sample per value on a track per agent, its value a
/// PMC event.
pub fn rocpd(dbs: &[PathBuf], kind: Sampled) -> Series {
    let mut sums = Series::new();
    for db in dbs {
        let db = rusqlite::Connection::open(db).unwrap();
        let rows: Vec<(String, i64, String, f64)> = crate::sqlite_rows(
            &db,
            "SELECT S.string, R.timestamp, P.name, V.value FROM rocpd_sample R \
             JOIN rocpd_track T ON T.id = R.track_id JOIN rocpd_string S ON S.id = T.name_id \
             JOIN rocpd_pmc_event V ON V.event_id = R.event_id \
             JOIN rocpd_info_pmc P ON P.id = V.pmc_id",
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        );
        for (track, time, counter, value) in rows {
            let Some(agent) = track.strip_prefix(kind.rocpd_prefix()) else {
                continue;
            };
            let key = (agent.parse().unwrap(), counter, time as u64);
            *sums.entry(key).or_default() += value;
        }
    }
    sums
}

/// The device counter reads the HTML report plots: a chart per GPU and counter, a point
/// per read.
pub fn report(html: &Path) -> Series {
    let report = std::fs::read_to_string(html).unwrap();
    let mut plotted = Series::new();
    for figure in report.split("<figure class=\"chart device\">").skip(1) {
        let figure = &figure[..figure.find("</figure>").unwrap()];
        let label = &figure[figure.find("aria-label=\"").unwrap() + 12..];
        let (counter, gpu) = label[..label.find('"').unwrap()].split_once(", ").unwrap();
        // "agent N gfx942"
        let agent: u32 = gpu.split(' ').nth(1).unwrap().parse().unwrap();
        for point in figure.split("data-ns=\"").skip(1) {
            let time = point[..point.find('"').unwrap()].parse().unwrap();
            let value = &point[point.find("data-value=\"").unwrap() + 12..];
            let value: f64 = value[..value.find('"').unwrap()].parse().unwrap();
            plotted.insert((agent, counter.to_owned(), time), value);
        }
    }
    plotted
}

/// Where `seen` differs from `want`: the first few places, or nothing.
pub fn differences(want: &Series, seen: &Series) -> Option<String> {
    let keys: std::collections::BTreeSet<_> = want.keys().chain(seen.keys()).collect();
    let differ: Vec<_> = (keys.into_iter())
        .filter(|k| want.get(*k) != seen.get(*k))
        .collect();
    let first: Vec<String> = (differ.iter().take(3))
        .map(|k| format!("{k:?}: {:?}, want {:?}", seen.get(*k), want.get(*k)))
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "{} of {} sums differ from the CSV's, such as {}",
            differ.len(),
            want.len(),
            first.join("; ")
        )
    })
}
