//! Frames through a real spool file: round trips, and damaged files read up to the damage.

use rocflow_core::record::{
    ApiArgs, ApiCall, Arg, ArgValue, Batch, CounterSample, KernelDispatch, KernelSymbol, Marker,
    MemoryCopy, Meta, RecordKind, Sym,
};
use rocflow_core::spool::{Ending, SpoolReader, SpoolWriter};
use rocflow_core::wire::{self, Frame, FrameError, MetaError, Payload, WireError};

fn frames() -> Vec<Frame> {
    let dispatches = (0..1000u64)
        .map(|i| KernelDispatch {
            pid: 42,
            tid: 43,
            dispatch_id: i,
            kernel_id: i % 7,
            start_ns: 1_000 + i * 100,
            end_ns: 1_050 + i * 100,
            correlation_id: i + 1,
            grid_x: 1024,
            workgroup_x: 256,
            vgpr_count: 64,
            graph_exec_id: i % 3,
            graph_node_id: i % 5,
            hip_stream: 1 + i % 4,
            ..Default::default()
        })
        .collect();
    let copies = vec![MemoryCopy {
        bytes: 1 << 30,
        operation_id: 2,
        start_ns: 5,
        end_ns: 9,
        graph_exec_id: 2,
        graph_node_id: 4,
        dst_address: 0x7f00_0000_1000,
        src_address: 0x7e00_0000_2000,
        hip_stream: 3,
        ..Default::default()
    }];
    let mut args = ApiArgs::default();
    args.begin(77);
    args.push(Arg {
        position: 2,
        name: Sym(0),
        type_name: Sym(0),
        value: ArgValue::Int(1 << 20),
    });
    let api = vec![ApiCall {
        correlation_id: 77,
        domain_id: 5,
        operation_id: 31,
        start_ns: 1,
        end_ns: 2,
        ..Default::default()
    }];
    let markers = vec![Marker {
        message: Sym(0),
        ..Default::default()
    }];
    let counters = vec![CounterSample {
        counter_id: 3,
        xcc: 7,
        value: 2.5,
        ..Default::default()
    }];
    let meta = vec![
        Meta::Strings {
            first: 0,
            values: vec!["iteration 1".into()],
        },
        Meta::KernelSymbol(KernelSymbol {
            kernel_id: 0,
            code_object_id: 1,
            name: "_Z4gemmPfS_S_i".into(),
            lds_bytes: 0,
            scratch_bytes: 0,
            arch_vgpr_count: 64,
            sgpr_count: 32,
            kernarg_bytes: 32,
        }),
    ];
    [
        (0, Payload::Meta(meta)),
        (0, Payload::Records(Batch::KernelDispatch(dispatches))),
        (1, Payload::Records(Batch::MemoryCopy(copies))),
        (1, Payload::Args(args)),
        (1, Payload::Records(Batch::Api(api))),
        (
            0,
            Payload::Meta(vec![Meta::MarkerMessages {
                messages: vec![(1, 0), (u64::MAX, u32::MAX)],
            }]),
        ),
        (0, Payload::Records(Batch::Marker(markers))),
        (0, Payload::Records(Batch::CounterSample(counters))),
    ]
    .into_iter()
    .map(|(stream, payload)| Frame { stream, payload })
    .collect()
}

fn encode(frames: &[Frame]) -> (Vec<u8>, Vec<u64>) {
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for frame in frames {
        offsets.push((wire::STREAM_HEADER + bytes.len()) as u64);
        frame.encode(&mut bytes);
    }
    (bytes, offsets)
}

fn write_spool(dir: &tempfile::TempDir, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join("run.rfraw");
    let mut writer = SpoolWriter::create(&path).unwrap();
    writer.write(bytes).unwrap();
    writer.finish().unwrap();
    path
}

/// A spool of `bytes` as a runner killed after writing them leaves it: its end not
/// recorded.
fn cut_spool(dir: &tempfile::TempDir, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join("cut.rfraw");
    std::fs::write(&path, [&wire::stream_header()[..], bytes].concat()).unwrap();
    path
}

fn read_all(path: &std::path::Path) -> (Vec<Frame>, Ending) {
    let mut reader = SpoolReader::open(path).unwrap();
    let frames = reader.by_ref().map(Result::unwrap).collect();
    (frames, reader.ending().cloned().unwrap())
}

#[test]
fn frames_round_trip_through_a_spool() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let path = write_spool(&dir, &encode(&original).0);
    let (read, ending) = read_all(&path);
    assert_eq!(ending, Ending::Complete);
    assert_eq!(read, original);
}

/// A spool written in many pieces, past the stretches whose writeback the writer starts
/// early (32 MiB), reads back whole.
#[test]
fn a_spool_larger_than_the_writeback_stretch_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let bytes = encode(&original).0;
    let copies = (80 << 20) / bytes.len() + 1;
    let path = dir.path().join("run.rfraw");
    let mut writer = SpoolWriter::create(&path).unwrap();
    for _ in 0..copies {
        writer.write(&bytes).unwrap();
    }
    writer.finish().unwrap();
    let (read, ending) = read_all(&path);
    assert_eq!(ending, Ending::Complete);
    assert_eq!(read.len(), copies * original.len());
    assert!(read.chunks(original.len()).all(|copy| copy == original));
}

#[test]
fn a_truncated_last_frame_is_dropped_and_the_prefix_kept() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let (bytes, offsets) = encode(&original);
    let n = original.len() - 1;
    let last = offsets[n] as usize - wire::STREAM_HEADER;
    // Cut inside the last payload (one byte short), then inside its header (5 of 12 bytes).
    for (cut, missing) in [(bytes.len() - 1, 1), (last + 5, wire::FRAME_HEADER - 5)] {
        let path = cut_spool(&dir, &bytes[..cut]);
        let (read, ending) = read_all(&path);
        assert_eq!(read, original[..n]);
        assert_eq!(
            ending,
            Ending::Truncated {
                offset: offsets[n],
                missing
            }
        );
    }
}

#[test]
fn a_corrupt_frame_ends_the_valid_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let (mut bytes, offsets) = encode(&original);
    // Flip one bit inside the kernel dispatch payload.
    let inside = offsets[1] as usize - wire::STREAM_HEADER + wire::FRAME_HEADER + 100;
    bytes[inside] ^= 0x10;
    let path = cut_spool(&dir, &bytes);
    let (read, ending) = read_all(&path);
    assert_eq!(read, original[..1]);
    assert_eq!(
        ending,
        Ending::Corrupt {
            offset: offsets[1],
            reason: FrameError::Checksum
        }
    );
    assert!(
        ending
            .warning()
            .unwrap()
            .contains(&format!("corrupt at byte {}", offsets[1]))
    );
}

/// Frames are read several at a time and decoded in parallel, yet one that decodes and then
/// breaks its stream (its strings numbered past a gap) ends the prefix at itself, wherever
/// it falls among the frames read with it.
#[test]
fn a_frame_wrong_once_decoded_ends_the_prefix_wherever_it_falls() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let gap = Frame {
        stream: 0,
        payload: Payload::Meta(vec![Meta::Strings {
            first: 5,
            values: vec!["after a gap".into()],
        }]),
    };
    for at in 1..=original.len() {
        let mut frames = original.clone();
        frames.insert(at, gap.clone());
        let (bytes, offsets) = encode(&frames);
        let (read, ending) = read_all(&write_spool(&dir, &bytes));
        assert_eq!(read, frames[..at], "the gap at frame {at}");
        let problem = MetaError::StringsGap {
            first: 5,
            numbered: 1,
        };
        let reason = FrameError::MetaItem { item: 1, problem };
        let offset = offsets[at];
        assert_eq!(
            ending,
            Ending::Corrupt { offset, reason },
            "the gap at {at}"
        );
    }
}

/// A spool its writer closed records its end, as its last 20 bytes; one cut short between
/// two frames (the runner killed) reads as every frame it holds, its end not recorded.
#[test]
fn a_spool_without_its_recorded_end_was_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let (bytes, _) = encode(&original);
    let path = write_spool(&dir, &bytes);
    let whole = std::fs::read(&path).unwrap();
    assert_eq!(whole.len(), wire::STREAM_HEADER + bytes.len() + 20);

    let cut = cut_spool(&dir, &bytes);
    let (read, ending) = read_all(&cut);
    assert_eq!(read, original);
    assert_eq!(
        ending,
        Ending::Unrecorded {
            version: wire::VERSION
        }
    );
    let warning = ending.warning().unwrap();
    assert!(warning.contains("end is not recorded"), "{warning}");
    assert!(warning.contains("cut short"), "{warning}");
}

/// What follows a recorded end, and an end frame that names another place than its own
/// (copied from another spool), are corruption where they are; the frames before read.
#[test]
fn a_recorded_end_is_the_last_thing_in_the_spool() {
    let dir = tempfile::tempdir().unwrap();
    let original = frames();
    let (bytes, _) = encode(&original);
    let whole = std::fs::read(write_spool(&dir, &bytes)).unwrap();
    let end_at = (wire::STREAM_HEADER + bytes.len()) as u64;

    let mut more = whole.clone();
    more.extend_from_slice(&whole[wire::STREAM_HEADER..wire::STREAM_HEADER + 40]);
    let (read, ending) = read_all(&cut_spool(&dir, &more[wire::STREAM_HEADER..]));
    assert_eq!(read, original);
    assert_eq!(
        ending,
        Ending::Corrupt {
            offset: end_at + 20,
            reason: FrameError::AfterEnd
        }
    );

    let mut moved = Vec::new();
    wire::encode_end(end_at + 1, &mut moved);
    let (read, ending) = read_all(&cut_spool(&dir, &[&bytes[..], &moved].concat()));
    assert_eq!(read, original);
    assert!(
        matches!(&ending, Ending::Corrupt { offset, reason: FrameError::EndElsewhere(named) } if *offset == end_at && *named == end_at + 1),
        "{ending:?}"
    );
}

/// A live stream records no end: a process cannot end the run's spool.
#[test]
fn a_live_stream_has_no_end_frame() {
    let mut end = Vec::new();
    wire::encode_end(wire::STREAM_HEADER as u64, &mut end);
    let bytes = [&wire::stream_header()[..], &end].concat();
    let mut live = wire::FrameReader::new(&bytes[..]).unwrap();
    let ending = live.next_raw(&mut Vec::new());
    assert!(
        matches!(
            &ending,
            Err(WireError::Corrupt {
                reason: FrameError::UnknownTag(255),
                ..
            })
        ),
        "{ending:?}"
    );
}

#[test]
fn other_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    std::fs::write(&path, b"{\"traceEvents\": []}").unwrap();
    assert!(matches!(
        SpoolReader::open(&path),
        Err(WireError::NotASpool)
    ));
    let mut future = wire::stream_header().to_vec();
    let next = wire::VERSION + 1;
    future[6..8].copy_from_slice(&next.to_le_bytes());
    std::fs::write(&path, future).unwrap();
    assert!(matches!(
        SpoolReader::open(&path),
        Err(WireError::Version(v)) if v == next
    ));
}

#[test]
fn record_sizes_are_what_is_written() {
    use rocflow_core::record::{Record, RecordKind, wire_size};
    for &kind in RecordKind::ALL {
        let mut out = Vec::new();
        let batch = Batch::with_capacity(kind, 0);
        batch.encode(&mut out);
        assert!(out.is_empty());
        assert!(wire_size(kind) > 0);
    }
    let mut out = Vec::new();
    KernelDispatch::default().encode(&mut out);
    assert_eq!(out.len(), KernelDispatch::SIZE);
    assert_eq!(KernelDispatch::SIZE, 12 + 8 * 10 + 4 * 10);
}

/// A spool of format version 5, whose dispatches and copies had no graph node or stream
/// yet and whose copies had no addresses (their layouts ended before them), reads as the
/// same records outside any graph, their addresses and streams unknown: every other field
/// where it was.
#[test]
fn a_version_5_spool_reads_its_dispatches_and_copies_outside_any_graph() {
    reads_as_older_version(5, |batch| match batch {
        Batch::KernelDispatch(dispatches) => dispatches.iter_mut().for_each(|d| {
            (d.graph_exec_id, d.graph_node_id, d.hip_stream) = (0, 0, 0);
        }),
        Batch::MemoryCopy(copies) => copies.iter_mut().for_each(|c| {
            (c.graph_exec_id, c.graph_node_id, c.hip_stream) = (0, 0, 0);
            (c.dst_address, c.src_address) = (0, 0);
        }),
        _ => {}
    });
}

/// A spool of format version 6, whose copies had no addresses yet, reads its copies with
/// the addresses unknown (0), its dispatches and copies with the stream unknown, and
/// everything else as written.
#[test]
fn a_version_6_spool_reads_its_copies_without_addresses() {
    reads_as_older_version(6, |batch| match batch {
        Batch::KernelDispatch(dispatches) => dispatches.iter_mut().for_each(|d| {
            d.hip_stream = 0;
        }),
        Batch::MemoryCopy(copies) => copies.iter_mut().for_each(|c| {
            (c.dst_address, c.src_address, c.hip_stream) = (0, 0, 0);
        }),
        _ => {}
    });
}

/// A spool of format version 7, whose dispatches and copies had no stream yet, reads them
/// with the stream unknown and everything else as written.
#[test]
fn a_version_7_spool_reads_its_dispatches_and_copies_on_an_unknown_stream() {
    reads_as_older_version(7, |batch| match batch {
        Batch::KernelDispatch(dispatches) => dispatches.iter_mut().for_each(|d| {
            assert_ne!(d.stream_id(), None, "each written dispatch has a stream");
            d.hip_stream = 0;
            assert_eq!(d.stream_id(), None);
        }),
        Batch::MemoryCopy(copies) => copies.iter_mut().for_each(|c| {
            assert_eq!(c.stream_id(), Some(2));
            c.hip_stream = 0;
        }),
        _ => {}
    });
}

/// Writes [`frames`] as format `version` wrote them (each record without the fields later
/// versions added at its end) and checks they read back as `forget` leaves them; kinds
/// `forget` does not change must have kept their layout.
fn reads_as_older_version(version: u16, forget: fn(&mut Batch)) {
    let mut bytes = wire::stream_header().to_vec();
    bytes[6..8].copy_from_slice(&version.to_le_bytes());
    let mut expected = Vec::new();
    for frame in frames() {
        let Payload::Records(mut batch) = frame.payload else {
            continue;
        };
        let full = rocflow_core::record::wire_size(batch.kind());
        let stored = wire::stored_size(batch.kind(), version);
        let mut payload = Vec::new();
        batch.encode(&mut payload);
        let payload: Vec<u8> = (payload.chunks_exact(full))
            .flat_map(|record| &record[..stored])
            .copied()
            .collect();
        let tag = 1
            + (RecordKind::ALL.iter())
                .position(|&k| k == batch.kind())
                .unwrap() as u8;
        bytes.extend_from_slice(&frame_of(version, tag, frame.stream, &payload));
        let before = batch.clone();
        forget(&mut batch);
        if batch == before {
            assert_eq!(stored, full, "{} changed its layout", batch.kind().name());
        }
        expected.push(Frame {
            stream: frame.stream,
            payload: Payload::Records(batch),
        });
    }
    let (read, ending) = read_bytes(&bytes);
    assert!(ending.is_ok(), "{ending:?}");
    assert_eq!(read, expected);
    // A stream of this version, whose records are whole, is not read as the older one's.
    let mut current = bytes.clone();
    current[6..8].copy_from_slice(&wire::VERSION.to_le_bytes());
    assert!(matches!(
        read_bytes(&current).1,
        Err(WireError::Corrupt {
            reason: FrameError::PartialRecords { .. },
            ..
        })
    ));
}

/// Marker messages travel in frames of their own from version 9 on, in their place among
/// the metadata items around them. An earlier version's spool has them in its metadata,
/// and reads; a marker messages frame in it is corrupt, as is one cut mid-message.
#[test]
fn marker_messages_have_frames_of_their_own_from_version_9() {
    let strings = Meta::Strings {
        first: 0,
        values: vec!["step".into()],
    };
    let messages = Meta::MarkerMessages {
        messages: vec![(5, 0), (9, 0)],
    };
    let dropped = Meta::Dropped {
        kind: RecordKind::Marker,
        count: 3,
    };
    let alone = |item: &Meta| Frame {
        stream: 2,
        payload: Payload::Meta(vec![item.clone()]),
    };
    let mut bytes = wire::stream_header().to_vec();
    let items = [strings.clone(), messages.clone(), dropped.clone()];
    wire::encode_meta(2, &items, &mut bytes);
    let (read, ending) = read_bytes(&bytes);
    assert!(ending.is_ok(), "{ending:?}");
    assert_eq!(read, [alone(&strings), alone(&messages), alone(&dropped)]);

    let version_8 = |body: &[u8]| [&b"RFRAW\0\x08\0"[..], body].concat();
    let (read, ending) = read_bytes(&version_8(&bytes[wire::STREAM_HEADER..]));
    assert_eq!(read, [alone(&strings)]);
    assert!(
        matches!(
            ending,
            Err(WireError::Corrupt {
                reason: FrameError::UnknownTag(130),
                ..
            })
        ),
        "{ending:?}"
    );
    let json = serde_json::to_vec(&items).unwrap();
    let (read, ending) = read_bytes(&version_8(&frame_of(8, 0, 2, &json)));
    assert!(ending.is_ok(), "{ending:?}");
    assert_eq!(
        read,
        [Frame {
            stream: 2,
            payload: Payload::Meta(items.to_vec()),
        }]
    );

    let mut cut = wire::stream_header().to_vec();
    cut.extend_from_slice(&frame_of(wire::VERSION, 130, 2, &[0; 13]));
    assert!(matches!(
        read_bytes(&cut).1,
        Err(WireError::Corrupt {
            reason: FrameError::PartialMarkers(13),
            ..
        })
    ));
}

/// A plain frame of a stream of format `version`, made by hand.
fn frame_of(version: u16, tag: u8, stream: u16, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![tag, 0];
    header.extend_from_slice(&stream.to_le_bytes());
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = wire::checksum(version, &header, payload);
    [&header[..], &crc.to_le_bytes(), payload].concat()
}

/// Reads every frame of a stream held in memory, and how reading ended.
fn read_bytes(bytes: &[u8]) -> (Vec<Frame>, Result<(), WireError>) {
    let mut reader = wire::FrameReader::kept(bytes).unwrap();
    let mut frames = Vec::new();
    loop {
        match reader.next_frame() {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => return (frames, Ok(())),
            Err(e) => return (frames, Err(e)),
        }
    }
}

/// Every single-byte change of a frame header is caught where the frame starts: no changed
/// tag, encoding byte or stream moves records to another kind or process. A length that
/// reaches past the end of the file reads as a frame cut short (there is no payload to
/// check it against); any other change is corruption.
#[test]
fn every_damaged_header_byte_is_detected() {
    // Few dispatches: each of the 3060 changes of each frame reads the frames before it.
    let mut original = frames();
    if let Payload::Records(Batch::KernelDispatch(dispatches)) = &mut original[1].payload {
        dispatches.truncate(20);
    }
    let (body, offsets) = encode(&original);
    let mut bytes = wire::stream_header().to_vec();
    bytes.extend_from_slice(&body);
    for (index, &offset) in offsets.iter().enumerate() {
        let at = offset as usize;
        let rest = bytes.len() - at - wire::FRAME_HEADER;
        for byte in 0..wire::FRAME_HEADER {
            for flip in 1..=255u8 {
                bytes[at + byte] ^= flip;
                let (read, ending) = read_bytes(&bytes);
                let claimed = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
                bytes[at + byte] ^= flip;
                assert_eq!(
                    read,
                    original[..index],
                    "byte {byte} ^ {flip:#x} of frame {index}"
                );
                match ending {
                    Err(WireError::Corrupt { offset: o, .. }) => assert_eq!(o, offset),
                    Err(WireError::Truncated { offset: o, .. }) if claimed as usize > rest => {
                        assert_eq!(o, offset)
                    }
                    other => panic!("byte {byte} ^ {flip:#x} of frame {index}: {other:?}"),
                }
            }
        }
    }
}

/// The runner renumbers each frame's stream as it arrives; the frame stays valid.
#[test]
fn a_renumbered_frame_keeps_a_valid_checksum() {
    for frame in frames() {
        let (body, _) = encode(std::slice::from_ref(&frame));
        let mut bytes = wire::stream_header().to_vec();
        bytes.extend_from_slice(&body);
        wire::set_stream(&mut bytes[wire::STREAM_HEADER..], 513);
        let (read, ending) = read_bytes(&bytes);
        assert!(ending.is_ok(), "{ending:?}");
        assert_eq!(
            read,
            [Frame {
                stream: 513,
                ..frame
            }]
        );
    }
}

/// A real spool of format version 1, written before version 2 (see its README).
fn version_1_spool() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/spool-v1/run.rfraw");
    std::fs::read(path).unwrap()
}

#[test]
fn a_version_1_spool_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.rfraw");
    std::fs::write(&path, version_1_spool()).unwrap();
    let (frames, ending) = read_all(&path);
    // Its format records no end: whole or not, it cannot say.
    assert_eq!(ending, Ending::Unrecorded { version: 1 });
    assert!(ending.warning().unwrap().contains("cannot be told"));
    let mut records = std::collections::BTreeMap::new();
    for frame in &frames {
        if let Payload::Records(batch) = &frame.payload {
            *records.entry(batch.kind().name()).or_insert(0) += batch.len();
        }
    }
    // What `rocflow run` reported when it wrote the spool.
    let expected = [
        ("api", 21),
        ("counter_sample", 63),
        ("kernel_dispatch", 18),
        ("memory_copy", 6),
    ];
    assert_eq!(records, expected.into_iter().collect());
}

/// Version 1 has no checksum over the header, so its frames get the checks that need none:
/// a known tag and an encoding byte of 0 (it stores no compressed payloads).
#[test]
fn a_version_1_header_is_checked_without_its_checksum() {
    let first = wire::STREAM_HEADER;
    for (byte, value, reason) in [
        (0, 99, FrameError::UnknownTag(99)),
        (1, 1, FrameError::Encoding(1)),
    ] {
        let mut bytes = version_1_spool();
        bytes[first + byte] = value;
        let (read, ending) = read_bytes(&bytes);
        assert!(read.is_empty());
        match ending {
            Err(WireError::Corrupt { offset, reason: r }) => {
                assert_eq!(offset, first as u64);
                assert_eq!(r, reason);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// `raw`, a plain frame, with its payload compressed as the runner stores it in a spool
/// (a part at a time); `None` where that would not be smaller.
fn compress(raw: &[u8]) -> Option<Vec<u8>> {
    let parts: Vec<Vec<u8>> = raw[wire::FRAME_HEADER..]
        .chunks(wire::COMPRESSED_PART)
        .map(|part| wire::compress_part(part).unwrap())
        .collect();
    wire::compressed_frame(raw, &parts)
}

/// Where [`raw_frames`] puts its 5,000 dispatches: after [`frames`].
const MANY: usize = 8;

/// Frames of [`frames`], and 5,000 dispatches (four compressed parts, the last one short),
/// each encoded alone.
fn raw_frames() -> (Vec<Frame>, Vec<Vec<u8>>) {
    let mut original = frames();
    let Payload::Records(Batch::KernelDispatch(dispatches)) = &original[1].payload else {
        unreachable!()
    };
    let many = (0..5).flat_map(|_| dispatches.clone()).collect();
    original.push(Frame {
        stream: 2,
        payload: Payload::Records(Batch::KernelDispatch(many)),
    });
    assert_eq!(original.len(), MANY + 1);
    let raw = original
        .iter()
        .map(|frame| encode(std::slice::from_ref(frame)).0)
        .collect();
    (original, raw)
}

/// A spool whose frames the runner stored compressed reads back as the frames it was
/// given, the records in a fraction of their size.
#[test]
fn compressed_frames_read_back_as_they_were_sent() {
    let (original, raw) = raw_frames();
    assert!(raw[MANY].len() > 3 * wire::COMPRESSED_PART + wire::FRAME_HEADER);
    let stored: Vec<Vec<u8>> = raw
        .iter()
        .map(|r| compress(r).unwrap_or(r.clone()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (read, ending) = read_all(&write_spool(&dir, &stored.concat()));
    assert_eq!(ending, Ending::Complete);
    assert_eq!(read, original);
    let sizes = |frames: &[Vec<u8>]| frames.iter().map(Vec::len).collect::<Vec<_>>();
    let (before, after) = (sizes(&raw), sizes(&stored));
    for i in [1, MANY] {
        assert!(after[i] * 10 <= before[i], "{before:?} -> {after:?}");
    }
}

/// The runner renumbers a frame's stream after compressing it; it stays valid.
#[test]
fn a_renumbered_compressed_frame_keeps_a_valid_checksum() {
    let (original, raw) = raw_frames();
    let mut bytes = wire::stream_header().to_vec();
    bytes.extend_from_slice(&compress(&raw[MANY]).unwrap());
    wire::set_stream(&mut bytes[wire::STREAM_HEADER..], 513);
    let (read, ending) = read_bytes(&bytes);
    assert!(ending.is_ok(), "{ending:?}");
    assert_eq!(read[0].stream, 513);
    assert_eq!(read[0].payload, original[MANY].payload);
}

/// A compressed payload from elsewhere is checked as a plain one is: what it claims is
/// bounded before memory is set aside, and a payload whose parts do not hold what it
/// claims is corrupt (with a valid checksum, as a hostile spool's would be), with the
/// frames before it read.
#[test]
fn a_damaged_compressed_payload_is_corrupt() {
    let (original, raw) = raw_frames();
    let compressed = compress(&raw[MANY]).unwrap();
    let payload = &compressed[wire::FRAME_HEADER..];
    let claim = |len: u32| [&len.to_le_bytes()[..], &payload[4..]].concat();
    let parts = (raw[MANY].len() - wire::FRAME_HEADER).div_ceil(wire::COMPRESSED_PART);
    assert!(parts > 2, "a frame of several parts");
    // The first part starts after the length and the parts' lengths, with zstd's magic.
    let mut not_zstd = payload.to_vec();
    not_zstd[4 + 4 * parts] ^= 0xff;
    let cases = [
        (
            claim(u32::MAX),
            "claims 4294967295 bytes once decompressed".to_owned(),
        ),
        (
            payload[..10].to_vec(),
            format!("its {parts} compressed parts are cut short"),
        ),
        (
            payload[..payload.len() - 1].to_vec(),
            format!("compressed part {parts} is cut short"),
        ),
        (
            claim((raw[MANY].len() - wire::FRAME_HEADER + 100) as u32),
            format!("compressed part {parts} holds"),
        ),
        (
            [payload, &[0]].concat(),
            "1 bytes follow its compressed parts".to_owned(),
        ),
        (
            not_zstd,
            "compressed part 1: Unknown frame descriptor".to_owned(),
        ),
        (payload[..3].to_vec(), "has no length".to_owned()),
    ];
    for (damaged, reason) in cases {
        let mut frame = compressed[..wire::FRAME_HEADER].to_vec();
        frame[4..8].copy_from_slice(&(damaged.len() as u32).to_le_bytes());
        let crc = wire::checksum(wire::VERSION, &frame, &damaged);
        frame[8..12].copy_from_slice(&crc.to_le_bytes());
        frame.extend_from_slice(&damaged);
        let bytes = [&wire::stream_header()[..], &raw[0], &frame].concat();
        let (read, ending) = read_bytes(&bytes);
        assert_eq!(read, original[..1]);
        match ending {
            Err(WireError::Corrupt { offset, reason: r }) => {
                assert_eq!(offset as usize, wire::STREAM_HEADER + raw[0].len());
                assert!(r.to_string().contains(&reason), "{r}, not {reason}");
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
}

/// A compressed frame made to expand (zstd parts of zeros, each size within the limits)
/// would read as hundreds of millions of records from a few MiB of spool: what it claims
/// is refused past the bound on expansion, naming the frame and the bound, before any
/// memory is set aside. The runner's own compressed frames stay far inside it.
#[test]
fn a_compressed_frame_that_expands_past_the_bound_is_corrupt() {
    let zeros = wire::compress_part(&[0; wire::COMPRESSED_PART]).unwrap();
    let parts = wire::MAX_PAYLOAD / wire::COMPRESSED_PART;
    let mut payload = ((parts * wire::COMPRESSED_PART) as u32)
        .to_le_bytes()
        .to_vec();
    for _ in 0..parts {
        payload.extend_from_slice(&(zeros.len() as u32).to_le_bytes());
    }
    for _ in 0..parts {
        payload.extend_from_slice(&zeros);
    }
    // A frame of kernel dispatches (tag 1 + its kind's index), stored compressed.
    let mut frame = vec![
        1 + rocflow_core::record::RecordKind::KernelDispatch as u8,
        1,
        0,
        0,
    ];
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = wire::checksum(wire::VERSION, &frame, &payload);
    frame.extend_from_slice(&crc.to_le_bytes());
    frame.extend_from_slice(&payload);
    let (_, raw) = raw_frames();
    let bytes = [&wire::stream_header()[..], &raw[0], &frame].concat();
    let (read, ending) = read_bytes(&bytes);
    assert_eq!(read.len(), 1);
    match ending {
        Err(WireError::Corrupt { offset, reason }) => {
            assert_eq!(offset as usize, wire::STREAM_HEADER + raw[0].len());
            let bound = format!("more than {} times as many", wire::MAX_EXPANSION);
            assert!(matches!(reason, FrameError::Expansion { .. }), "{reason:?}");
            assert!(reason.to_string().contains(&bound), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    for raw in &raw {
        if let Some(compressed) = compress(raw) {
            let expansion = raw.len() as f64 / compressed.len() as f64;
            assert!(expansion * 4.0 < wire::MAX_EXPANSION as f64, "{expansion}");
        }
    }
}

/// Records that repeat more than any run's (here 30,000 identical dispatches) compress past
/// the bound on expansion: the runner stores such a frame as it is, so the reader never
/// refuses a frame the runner wrote.
#[test]
fn a_frame_that_would_expand_past_the_bound_is_stored_plain() {
    let same = Frame {
        stream: 1,
        payload: Payload::Records(Batch::KernelDispatch(vec![
            KernelDispatch::default();
            30_000
        ])),
    };
    let (raw, _) = encode(std::slice::from_ref(&same));
    let parts: usize = (raw[wire::FRAME_HEADER..].chunks(wire::COMPRESSED_PART))
        .map(|part| wire::compress_part(part).unwrap().len())
        .sum();
    assert!(
        raw.len() > parts * wire::MAX_EXPANSION,
        "{} to {parts}",
        raw.len()
    );
    let stored = compress(&raw).unwrap_or_else(|| raw.clone());
    let (read, ending) = read_bytes(&[&wire::stream_header()[..], &stored].concat());
    assert!(ending.is_ok(), "{ending:?}");
    assert_eq!(read, [same]);
}

/// Spools of versions before 3 never held compressed frames, and a live stream never
/// does (the tool sends frames as it encodes them): one there is corrupt.
#[test]
fn a_compressed_frame_where_none_can_be_is_corrupt() {
    let (_, raw) = raw_frames();
    let compressed = compress(&raw[MANY]).unwrap();
    let mut version_2 = compressed.clone();
    let crc = wire::checksum(2, &version_2[..8], &version_2[wire::FRAME_HEADER..]);
    version_2[8..12].copy_from_slice(&crc.to_le_bytes());
    let mut header = wire::stream_header();
    header[6..].copy_from_slice(&2u16.to_le_bytes());
    let spool = read_bytes(&[&header[..], &version_2].concat());

    let live_bytes = [&wire::stream_header()[..], &compressed].concat();
    let mut live = wire::FrameReader::new(&live_bytes[..]).unwrap();
    let mut raw_frame = Vec::new();
    for ending in [spool.1, live.next_raw(&mut raw_frame).map(|_| ())] {
        assert!(
            matches!(
                &ending,
                Err(WireError::Corrupt {
                    reason: FrameError::Encoding(1),
                    ..
                })
            ),
            "{ending:?}"
        );
    }
    assert!(spool.0.is_empty());
}
