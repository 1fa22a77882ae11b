//! Cells that rocprofiler-sdk's rocpd writer stores LZ4-compressed: with LZ4 on (its
//! default since 1.4), `extdata`, `call_stack` and `line_info` are blobs, which AMD's
//! views read through an `lz4_decompress` SQL function that the file itself cannot carry.
//! A blob is taken as an LZ4 frame (it starts with the frame's magic number) or as an LZ4
//! block after its decompressed size (four bytes, little-endian), and is inflated to at
//! most a given size: a blob that claims or expands to more is refused before it is
//! allocated, as is any other untrusted cell.

use std::io::Read;

/// The LZ4 frame format's magic number, little-endian.
const FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// The inflated bytes of `blob`, if it is LZ4 data of at most `limit` bytes inflated.
pub fn inflate(blob: &[u8], limit: usize) -> Option<Vec<u8>> {
    if blob.starts_with(&FRAME_MAGIC) {
        let mut out = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        (lz4_flex::frame::FrameDecoder::new(blob).take(cap))
            .read_to_end(&mut out)
            .ok()?;
        return (out.len() <= limit).then_some(out);
    }
    let (size, block) = blob.split_first_chunk::<4>()?;
    let size = usize::try_from(u32::from_le_bytes(*size)).ok()?;
    if size > limit {
        return None;
    }
    lz4_flex::block::decompress(block, size).ok()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const JSON: &[u8] = br#"{"message": "solve", "message2": "solve solve solve solve"}"#;

    #[test]
    fn frames_and_sized_blocks_inflate() {
        let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
        frame.write_all(JSON).unwrap();
        let frame = frame.finish().unwrap();
        assert_eq!(inflate(&frame, 1 << 20).as_deref(), Some(JSON));
        let block = lz4_flex::block::compress_prepend_size(JSON);
        assert_eq!(inflate(&block, 1 << 20).as_deref(), Some(JSON));
    }

    #[test]
    fn what_inflates_past_the_limit_or_is_not_lz4_is_refused() {
        let big = vec![b'x'; 4096];
        let block = lz4_flex::block::compress_prepend_size(&big);
        assert_eq!(inflate(&block, 4095), None);
        assert_eq!(inflate(&block, 4096).map(|b| b.len()), Some(4096));
        let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
        frame.write_all(&big).unwrap();
        assert_eq!(inflate(&frame.finish().unwrap(), 4095), None);
        // A size that claims 4 GiB is refused before anything is allocated.
        assert_eq!(inflate(&[0xff, 0xff, 0xff, 0xff, 0x00], 1 << 20), None);
        assert_eq!(inflate(b"{}", 1 << 20), None);
        assert_eq!(inflate(&[0x04, 0x22, 0x4d, 0x18, 0xff], 1 << 20), None);
    }
}
