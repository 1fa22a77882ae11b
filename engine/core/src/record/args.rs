//! API call arguments, as rocprofiler-sdk's argument iteration gives them: per argument its
//! position, name, type and value text. They travel in frames of their own beside the API
//! records of the same delivery, each call's arguments found by its correlation id.
//!
//! Wire form, per call: correlation id (u64), argument count (u8), then per argument its
//! position (u8), name and type ([`Sym`], u32 each), a value tag (u8) and 8 value bytes.
//! A value the SDK printed as a decimal integer or a `0x` address travels as that number,
//! anything else as an interned string: sizes and pointers, most of what calls take, cost
//! no string table entry, and each value renders back to exactly the SDK's text.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{Out, Sym};

/// One argument's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgValue {
    /// Text, interned in the stream's string table.
    Text(Sym),
    /// An integer the SDK printed in decimal.
    Int(i64),
    /// A pointer or handle the SDK printed as `0x` and lowercase hex.
    Address(u64),
}

impl ArgValue {
    /// The value of the SDK's text `text` when a number renders back to it exactly: digits
    /// in canonical form (no sign but a leading `-`, no leading zero, lowercase hex). It
    /// runs for every argument of every call, so it checks the form without formatting.
    pub fn number(text: &str) -> Option<ArgValue> {
        let canonical = |digits: &str, digit: fn(&u8) -> bool| {
            !digits.is_empty()
                && digits.bytes().all(|b| digit(&b))
                && (digits == "0" || !digits.starts_with('0'))
        };
        if let Some(hex) = text.strip_prefix("0x") {
            let lower_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
            return canonical(hex, lower_hex)
                .then(|| u64::from_str_radix(hex, 16).ok())
                .flatten()
                .map(ArgValue::Address);
        }
        let digits = text.strip_prefix('-').unwrap_or(text);
        (canonical(digits, u8::is_ascii_digit) && text != "-0")
            .then(|| text.parse().ok())
            .flatten()
            .map(ArgValue::Int)
    }

    /// The SDK's text for the value; `string` resolves interned strings.
    pub fn text<'a>(self, string: impl Fn(Sym) -> &'a str) -> Cow<'a, str> {
        match self {
            ArgValue::Text(sym) => Cow::Borrowed(string(sym)),
            ArgValue::Int(v) => Cow::Owned(v.to_string()),
            ArgValue::Address(v) => Cow::Owned(format!("{v:#x}")),
        }
    }

    /// The wire form: a tag, then the value's bits.
    fn encode(self) -> (u8, u64) {
        match self {
            ArgValue::Text(sym) => (0, u64::from(sym.0)),
            ArgValue::Int(v) => (1, v as u64),
            ArgValue::Address(v) => (2, v),
        }
    }

    fn decode(tag: u8, bits: u64) -> Result<ArgValue, ArgsError> {
        match tag {
            0 => u32::try_from(bits)
                .map(|s| ArgValue::Text(Sym(s)))
                .map_err(|_| ArgsError::StringId(bits)),
            1 => Ok(ArgValue::Int(bits as i64)),
            2 => Ok(ArgValue::Address(bits)),
            _ => Err(ArgsError::ValueTag(tag)),
        }
    }
}

/// One argument of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    /// The argument's position in the call, from 0.
    pub position: u8,
    pub name: Sym,
    /// The argument's C type, as the SDK names it.
    pub type_name: Sym,
    pub value: ArgValue,
}

/// What is wrong with the wire form of a delivery's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("a call's header is cut short")]
    CallCut,
    #[error("arguments is cut short")]
    ArgumentsCut,
    #[error("string id {0} is out of range")]
    StringId(u64),
    #[error("unknown argument value tag {0}")]
    ValueTag(u8),
}

const CALL_SIZE: usize = 8 + 1;
const ARG_SIZE: usize = 1 + 4 + 4 + 1 + 8;

/// The arguments of a delivery's API calls.
#[derive(Debug, Clone, Default)]
pub struct ApiArgs {
    args: Vec<Arg>,
    /// Per call: its correlation id and its arguments' range in `args`.
    calls: Vec<(u64, u32, u8)>,
    /// Correlation id → index in `calls`, filled on decoding.
    index: HashMap<u64, usize>,
}

impl ApiArgs {
    /// Starts the arguments of the call `correlation_id`; [`ApiArgs::push`] adds them.
    pub fn begin(&mut self, correlation_id: u64) {
        self.calls.push((correlation_id, self.args.len() as u32, 0));
    }

    /// Adds an argument to the call begun last; a call keeps its first 255.
    pub fn push(&mut self, arg: Arg) {
        if let Some(call) = self.calls.last_mut()
            && call.2 < u8::MAX
        {
            call.2 += 1;
            self.args.push(arg);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn clear(&mut self) {
        self.args.clear();
        self.calls.clear();
        self.index.clear();
    }

    /// The arguments of the call `correlation_id`, if it has any here.
    pub fn of(&self, correlation_id: u64) -> Option<&[Arg]> {
        let &(_, start, count) = &self.calls[*self.index.get(&correlation_id)?];
        Some(&self.args[start as usize..start as usize + usize::from(count)])
    }

    /// Renames every string the arguments name (their names, types and text values) by
    /// `f`: for a reader that numbers strings apart and merges the numberings after.
    pub fn map_strings(&mut self, mut f: impl FnMut(Sym) -> Sym) {
        for arg in &mut self.args {
            arg.name = f(arg.name);
            arg.type_name = f(arg.type_name);
            if let ArgValue::Text(sym) = arg.value {
                arg.value = ArgValue::Text(f(sym));
            }
        }
    }

    /// Appends the wire form, a call's header and each argument in one piece.
    pub fn encode(&self, out: &mut impl Out) {
        for &(correlation_id, start, count) in &self.calls {
            let mut call = [0; CALL_SIZE];
            call[..8].copy_from_slice(&correlation_id.to_le_bytes());
            call[8] = count;
            out.put(&call);
            for arg in &self.args[start as usize..start as usize + usize::from(count)] {
                let (tag, bits) = arg.value.encode();
                let mut bytes = [0; ARG_SIZE];
                bytes[0] = arg.position;
                bytes[1..5].copy_from_slice(&arg.name.0.to_le_bytes());
                bytes[5..9].copy_from_slice(&arg.type_name.0.to_le_bytes());
                bytes[9] = tag;
                bytes[10..].copy_from_slice(&bits.to_le_bytes());
                out.put(&bytes);
            }
        }
    }

    /// Decodes a wire form; the error says what is wrong with it.
    pub fn decode(mut bytes: &[u8]) -> Result<ApiArgs, ArgsError> {
        let mut args = ApiArgs::default();
        while !bytes.is_empty() {
            let (head, rest) = split(bytes, CALL_SIZE, ArgsError::CallCut)?;
            let correlation_id = u64::from_le_bytes(head[..8].try_into().unwrap());
            args.index.insert(correlation_id, args.calls.len());
            args.begin(correlation_id);
            let (body, rest) = split(
                rest,
                usize::from(head[8]) * ARG_SIZE,
                ArgsError::ArgumentsCut,
            )?;
            for a in body.chunks_exact(ARG_SIZE) {
                let word = |at: usize| u32::from_le_bytes(a[at..at + 4].try_into().unwrap());
                args.push(Arg {
                    position: a[0],
                    name: Sym(word(1)),
                    type_name: Sym(word(5)),
                    value: ArgValue::decode(a[9], u64::from_le_bytes(a[10..].try_into().unwrap()))?,
                });
            }
            bytes = rest;
        }
        Ok(args)
    }
}

impl PartialEq for ApiArgs {
    /// The same calls with the same arguments (the index is only a way to them).
    fn eq(&self, other: &Self) -> bool {
        self.calls == other.calls && self.args == other.args
    }
}

/// `bytes` split after `len`, or `short` where they are fewer.
fn split(bytes: &[u8], len: usize, short: ArgsError) -> Result<(&[u8], &[u8]), ArgsError> {
    if bytes.len() < len {
        return Err(short);
    }
    Ok(bytes.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_travel_as_numbers_only_when_they_render_back_exactly() {
        assert_eq!(ArgValue::number("1048576"), Some(ArgValue::Int(1 << 20)));
        assert_eq!(ArgValue::number("-3"), Some(ArgValue::Int(-3)));
        assert_eq!(ArgValue::number("0"), Some(ArgValue::Int(0)));
        assert_eq!(ArgValue::number("0x0"), Some(ArgValue::Address(0)));
        assert_eq!(
            ArgValue::number("0x7f00aa"),
            Some(ArgValue::Address(0x7f00aa))
        );
        for text in [
            "007",
            "+1",
            "0X10",
            "0x0010",
            "0xABC",
            "{1, 1, 1}",
            "",
            "1.5",
        ] {
            assert_eq!(ArgValue::number(text), None, "{text}");
        }
    }

    #[test]
    fn arguments_round_trip_and_are_found_by_correlation_id() {
        let arg = |position, value| Arg {
            position,
            name: Sym(position as u32 + 1),
            type_name: Sym(9),
            value,
        };
        let mut args = ApiArgs::default();
        args.begin(7);
        args.push(arg(0, ArgValue::Address(0x1000)));
        args.push(arg(1, ArgValue::Int(-1)));
        args.begin(8);
        args.begin(9);
        args.push(arg(0, ArgValue::Text(Sym(4))));
        let mut bytes = Vec::new();
        args.encode(&mut bytes);
        assert_eq!(bytes.len(), 3 * CALL_SIZE + 3 * ARG_SIZE);
        let back = ApiArgs::decode(&bytes).unwrap();
        assert_eq!(back.of(7).unwrap()[1], arg(1, ArgValue::Int(-1)));
        assert_eq!(back.of(8), Some(&[][..]));
        assert_eq!(back.of(9).unwrap(), &[arg(0, ArgValue::Text(Sym(4)))]);
        assert_eq!(back.of(10), None);
        assert_eq!(
            ApiArgs::decode(&bytes[..bytes.len() - 1]),
            Err(ArgsError::ArgumentsCut)
        );
    }
}
