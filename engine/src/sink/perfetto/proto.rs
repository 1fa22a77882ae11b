//! Just enough protobuf to write Perfetto's trace format by hand: varints, fixed 64-bit
//! values and length-delimited fields. A nested message is written in place behind a
//! one-byte length that is widened, moving the body, only when it turns out longer than
//! 127 bytes (rare: most messages here are small), so nothing is built twice.
//!
//! Field numbers are those of Perfetto's `protos/perfetto/trace/` schema; the tests decode
//! the output with that schema.

/// Wire types.
const VARINT: u32 = 0;
const I64: u32 = 1;
const LEN: u32 = 2;

/// Protobuf bytes being written.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// An unsigned (or non-negative) integer field.
    #[inline]
    pub fn uint(&mut self, field: u32, value: u64) {
        self.key(field, VARINT);
        self.varint(value);
    }

    /// A signed `int64` field (two's complement, as protobuf's `int64` is).
    #[inline]
    pub fn int(&mut self, field: u32, value: i64) {
        self.uint(field, value as u64);
    }

    #[inline]
    pub fn double(&mut self, field: u32, value: f64) {
        self.key(field, I64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    #[inline]
    pub fn fixed64(&mut self, field: u32, value: u64) {
        self.key(field, I64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    #[inline]
    pub fn str(&mut self, field: u32, value: &str) {
        self.key(field, LEN);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value.as_bytes());
    }

    /// A nested message whose fields `body` writes.
    #[inline]
    pub fn message(&mut self, field: u32, body: impl FnOnce(&mut Encoder)) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.push(0);
        body(self);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            self.buf[at] = len as u8;
        } else {
            let (mut prefix, mut n) = ([0; 10], 0);
            varint_bytes(len as u64, |byte| {
                prefix[n] = byte;
                n += 1;
            });
            self.buf.splice(at..at + 1, prefix[..n].iter().copied());
        }
    }

    #[inline]
    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    /// Pushed byte by byte: copying a few bytes from a scratch array is a call to `memcpy`
    /// of a length unknown until run time, a tenth of the encoding's time.
    #[inline]
    fn varint(&mut self, value: u64) {
        let buf = &mut self.buf;
        varint_bytes(value, |byte| buf.push(byte));
    }
}

/// Gives `value`'s varint bytes to `put`, in order.
#[inline]
fn varint_bytes(mut value: u64, mut put: impl FnMut(u8)) {
    while value >= 0x80 {
        put(value as u8 | 0x80);
        value >>= 7;
    }
    put(value as u8);
}

/// `Trace`: the file is its repeated `packet` field.
pub const TRACE_PACKET: u32 = 1;

/// `TracePacket`.
pub mod packet {
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `TracePacket.SequenceFlags`.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
}

/// `ClockSnapshot` and its `Clock`.
pub mod clock {
    pub const CLOCKS: u32 = 1;
    pub const PRIMARY_TRACE_CLOCK: u32 = 2;
    pub const CLOCK_ID: u32 = 1;
    pub const TIMESTAMP: u32 = 2;
    pub const UNIT_MULTIPLIER_NS: u32 = 4;
    /// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`: rocprofiler-sdk's timestamps.
    pub const BOOTTIME: u64 = 6;
    /// The trace's own clock for a coarser time unit: ids from 128 on are global clocks
    /// an application defines.
    pub const SCALED: u64 = 128;
}

/// `InternedData` and the entries it holds (`EventCategory`, `EventName` and
/// `DebugAnnotationName` all have `iid = 1`, `name = 2`).
pub mod interned {
    pub const EVENT_CATEGORIES: u32 = 1;
    pub const EVENT_NAMES: u32 = 2;
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
}

/// `TrackEvent`.
pub mod event {
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const TYPE: u32 = 9;
    pub const NAME_IID: u32 = 10;
    pub const TRACK_UUID: u32 = 11;
    pub const NAME: u32 = 23;
    pub const COUNTER_VALUE: u32 = 30;
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `TrackEvent.Type`.
    pub const SLICE_BEGIN: u64 = 1;
    pub const SLICE_END: u64 = 2;
    pub const INSTANT: u64 = 3;
    pub const COUNTER: u64 = 4;
}

/// `DebugAnnotation`.
pub mod annotation {
    pub const NAME_IID: u32 = 1;
    pub const UINT_VALUE: u32 = 3;
    pub const INT_VALUE: u32 = 4;
    pub const STRING_VALUE: u32 = 6;
    pub const POINTER_VALUE: u32 = 7;
    pub const NAME: u32 = 10;
}

/// `TrackDescriptor` and the descriptors it nests.
pub mod track {
    pub const UUID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const PARENT_UUID: u32 = 5;
    pub const COUNTER: u32 = 8;
    /// `ProcessDescriptor`.
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_CMDLINE: u32 = 2;
    pub const PROCESS_NAME: u32 = 6;
    /// `ThreadDescriptor`.
    pub const THREAD_PID: u32 = 1;
    pub const THREAD_TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
    /// `CounterDescriptor.unit` and its `UNIT_SIZE_BYTES`.
    pub const COUNTER_UNIT: u32 = 3;
    pub const UNIT_SIZE_BYTES: u64 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_encode_as_protobuf_does() {
        let mut e = Encoder::default();
        e.uint(1, 150);
        assert_eq!(e.bytes(), [0x08, 0x96, 0x01]);
        e.clear();
        e.int(2, -1);
        assert_eq!(e.bytes().len(), 1 + 10);
        e.clear();
        e.str(60, "ab");
        assert_eq!(e.bytes(), [0xe2, 0x03, 2, b'a', b'b']);
    }

    #[test]
    fn long_nested_messages_get_a_wider_length() {
        let mut e = Encoder::default();
        let text = "x".repeat(200);
        e.message(1, |m| m.str(2, &text));
        // 1 key byte, a 2-byte length (203), then the body: key, 2-byte length, text.
        assert_eq!(&e.bytes()[..5], [0x0a, 0xcb, 0x01, 0x12, 0xc8]);
        assert_eq!(e.bytes().len(), 3 + 3 + 200);
        let mut short = Encoder::default();
        short.message(1, |m| m.uint(1, 1));
        assert_eq!(short.bytes(), [0x0a, 2, 0x08, 1]);
    }
}
