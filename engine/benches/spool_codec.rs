//! What compressing the spool costs, codec by codec: the frames of a `rocflow run` on the
//! simulated SDK (launches and their dispatches, `SPOOL_CODEC_RECORDS` records, default
//! 2 M), stored as they are, then each frame's payload compressed in the parts the runner
//! makes ([`wire::COMPRESSED_PART`]) with zstd at the runner's level and others, and with
//! LZ4, and decompressed again. Per codec: how much smaller, and the nanoseconds of one
//! core per record to compress (what the runner's compressor threads spend) and to
//! decompress (what every later read spends), the best of three passes. Run with
//! `cargo bench -p rocflow --bench spool_codec`.

#[allow(dead_code)]
mod sim;

use std::time::{Duration, Instant};

use rocflow::wire;

/// The runner's pipeline: a spool of launches and dispatches, nothing else.
const PIPELINE: &str = r#"
[pipeline]
name = "spool-only"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api"]
buffer = { size = "64MiB", watermark = "50%", policy = "lossless" }
"#;

/// Payloads the runner leaves as they are (metadata, a few records).
const SMALLEST: usize = 4 << 10;

/// Stores a part.
type Compress = Box<dyn Fn(&[u8]) -> Vec<u8>>;
/// Reads a stored part back into a buffer of its size.
type Decompress = Box<dyn Fn(&[u8], &mut [u8])>;

/// A way to store a part, and to read it back.
struct Codec {
    name: String,
    compress: Compress,
    decompress: Decompress,
}

fn zstd(level: i32) -> Codec {
    Codec {
        name: format!("zstd level {level}"),
        compress: Box::new(move |part| zstd::bulk::compress(part, level).unwrap()),
        decompress: Box::new(|stored, out| {
            let n = zstd::bulk::decompress_to_buffer(stored, out).unwrap();
            assert_eq!(n, out.len());
        }),
    }
}

fn lz4() -> Codec {
    Codec {
        name: "lz4 (block)".to_owned(),
        compress: Box::new(lz4_flex::block::compress),
        decompress: Box::new(|stored, out| {
            let n = lz4_flex::block::decompress_into(stored, out).unwrap();
            assert_eq!(n, out.len());
        }),
    }
}

/// The lowest time `f` takes in three passes.
fn best(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let records = std::env::var("SPOOL_CODEC_RECORDS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(2_000_000u64);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    sim::scenario(d, records / sim::RECORDS_PER_ITERATION);
    std::fs::write(d.join("run.toml"), PIPELINE).unwrap();
    sim::run(d, "run.toml", &["--spool-compression", "none"]);
    let file = std::io::BufReader::new(std::fs::File::open(d.join("run.rfraw")).unwrap());
    let mut reader = wire::FrameReader::kept(file).unwrap();
    let (mut frame, mut parts, mut stored_plain) = (Vec::new(), Vec::new(), 0);
    while reader.next_raw(&mut frame).unwrap() {
        let payload = &frame[wire::FRAME_HEADER..];
        stored_plain += payload.len();
        if payload.len() >= SMALLEST {
            parts.extend(payload.chunks(wire::COMPRESSED_PART).map(<[u8]>::to_vec));
        }
    }
    let taken: usize = parts.iter().map(Vec::len).sum();
    println!(
        "spool codecs: {records} records, {:.1} bytes a record stored as they are, {:.0}% of it \
         in frames compressed, one core",
        stored_plain as f64 / records as f64,
        100.0 * taken as f64 / stored_plain as f64
    );
    let per_record = |d: Duration| d.as_secs_f64() * 1e9 / records as f64;
    let gbs = |d: Duration| taken as f64 / d.as_secs_f64() / 1e9;
    for codec in [
        zstd(3),
        zstd(1),
        zstd(-1),
        zstd(-3),
        zstd(-5),
        zstd(-10),
        lz4(),
    ] {
        let mut stored = Vec::new();
        let compress = best(|| stored = parts.iter().map(|p| (codec.compress)(p)).collect());
        let mut out = vec![0; wire::COMPRESSED_PART];
        let decompress = best(|| {
            for (part, stored) in parts.iter().zip(&stored) {
                (codec.decompress)(stored, &mut out[..part.len()]);
            }
        });
        let size: usize = stored.iter().map(Vec::len).sum();
        println!(
            "  {:<14} {:>5.1}x smaller ({:>4.1} bytes a record)   compress {:>5.1} ns/record \
             ({:.2} GB/s)   decompress {:>4.1} ns/record ({:.2} GB/s)",
            codec.name,
            taken as f64 / size as f64,
            (stored_plain - taken + size) as f64 / records as f64,
            per_record(compress),
            gbs(compress),
            per_record(decompress),
            gbs(decompress),
        );
    }
}
