//! A serde `Deserializer` over the spanned YAML tree of `rocflow_counters::yaml`, so that
//! rocprofv3 input files are read into typed structs and every fault (a wrong type, an
//! unknown or repeated key, a missing one) points at its place in the file.
//!
//! Scalars are typed the way rocprofv3's reader (PyYAML) types them where it matters: a
//! plain `yes`, `on` or `true` is a boolean where a boolean is expected, and a plain `2024`
//! is fine where a string is expected. Quoted scalars are strings.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use rocflow_counters::yaml::{Node, Scalar, Value};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};

use crate::diag::did_you_mean;

/// Reads `T` from a node of the tree.
pub fn from_node<'de, T: Deserialize<'de>>(node: &'de Node) -> Result<T, Error> {
    T::deserialize(NodeDe {
        node,
        entry: None,
        path: &Path::Root,
    })
}

/// A value and where it was written: `key: value` when it is a mapping's value (so a
/// message about an option underlines the option), the value alone otherwise.
///
/// Only [`from_node`] knows how to fill in the span.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Range<usize>,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Range<usize>) -> Self {
        Spanned { value, span }
    }
}

/// The struct name and fields through which [`NodeDe`] hands a [`Spanned`] its span.
const SPANNED: &str = "$rocflow::Spanned";
const SPANNED_FIELDS: &[&str] = &["$start", "$end", "$value"];

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpannedVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for SpannedVisitor<T> {
            type Value = Spanned<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value with its place in the file")
            }

            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Spanned<T>, A::Error> {
                let start = field(&mut map, SPANNED_FIELDS[0])?;
                let end = field(&mut map, SPANNED_FIELDS[1])?;
                let value = field(&mut map, SPANNED_FIELDS[2])?;
                Ok(Spanned::new(value, start..end))
            }
        }

        deserializer.deserialize_struct(SPANNED, SPANNED_FIELDS, SpannedVisitor(PhantomData))
    }
}

/// The value of the field `name`, which must come next.
fn field<'de, A: de::MapAccess<'de>, V: Deserialize<'de>>(
    map: &mut A,
    name: &str,
) -> Result<V, A::Error> {
    match map.next_key::<String>()? {
        Some(key) if key == name => map.next_value(),
        _ => Err(de::Error::custom(
            "Spanned values come from the YAML reader",
        )),
    }
}

/// What went wrong, and where.
#[derive(Debug)]
pub struct Error {
    pub message: String,
    pub span: Option<Range<usize>>,
    pub hint: Option<String>,
    /// Where in the document, e.g. `jobs[1].pmc`, once known.
    place: Option<String>,
    /// Whether the message names the place itself (faults of a value) or the place is
    /// the mapping a key was found in (unknown keys).
    kind: ErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ErrorKind {
    Value,
    Key,
}

impl Error {
    fn new(message: String) -> Self {
        Error {
            message,
            span: None,
            hint: None,
            place: None,
            kind: ErrorKind::Value,
        }
    }

    /// Fills in the place of the innermost node the error came from.
    fn at(mut self, span: &Range<usize>, path: &Path) -> Self {
        if self.span.is_none() {
            self.span = Some(span.clone());
            self.place = path.describe();
        }
        self
    }

    /// The message with the place it is about.
    pub fn describe(&self) -> String {
        match (&self.place, self.kind) {
            (None, _) => self.message.clone(),
            (Some(place), ErrorKind::Key) => format!("{} in `{place}`", self.message),
            (Some(place), ErrorKind::Value) => format!("`{place}`: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error::new(message.to_string())
    }

    fn invalid_type(unexpected: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Error::new(format!(
            "expected {}, found {}",
            expectation(expected),
            found(&unexpected)
        ))
    }

    fn invalid_value(unexpected: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Error::new(format!(
            "{} is not {}",
            found(&unexpected),
            expectation(expected)
        ))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        let hint = did_you_mean(field, expected.iter().copied()).or_else(|| {
            (expected.len() <= 8).then(|| format!("keys here: {}", expected.join(", ")))
        });
        Error {
            hint,
            kind: ErrorKind::Key,
            ..Error::new(format!("unknown key `{field}`"))
        }
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Error {
            hint: did_you_mean(variant, expected.iter().copied())
                .or_else(|| Some(format!("one of: {}", expected.join(", ")))),
            ..Error::new(format!("`{variant}` is not a valid value"))
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Error::new(format!("`{field}` is missing"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        Error {
            kind: ErrorKind::Key,
            ..Error::new(format!("`{field}` is set twice"))
        }
    }
}

/// serde's names for what was expected, in the words of a YAML user.
fn expectation(expected: &dyn de::Expected) -> String {
    let text = expected.to_string();
    match text.as_str() {
        "a sequence" => "a list".to_owned(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        other if other.starts_with("struct ") || other.starts_with("a map") => {
            "a mapping".to_owned()
        }
        _ => text,
    }
}

fn found(unexpected: &Unexpected<'_>) -> String {
    match unexpected {
        Unexpected::Str(s) => format!("the string \"{s}\""),
        Unexpected::Bool(b) => format!("`{b}`"),
        Unexpected::Unsigned(n) => format!("the number {n}"),
        Unexpected::Signed(n) => format!("the number {n}"),
        Unexpected::Float(n) => format!("the number {n}"),
        Unexpected::Unit => "nothing".to_owned(),
        Unexpected::Seq => "a list".to_owned(),
        Unexpected::Map => "a mapping".to_owned(),
        other => other.to_string(),
    }
}

/// Where a node is: `jobs[1].pmc`.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn describe(&self) -> Option<String> {
        match self {
            Path::Root => None,
            Path::Key(parent, key) => Some(match parent.describe() {
                Some(p) => format!("{p}.{key}"),
                None => (*key).to_owned(),
            }),
            Path::Index(parent, i) => {
                Some(format!("{}[{i}]", parent.describe().unwrap_or_default()))
            }
        }
    }
}

/// Reads one node. The tree lives for `'de`; the path to the node only while serde is in
/// it (`'p`), so errors copy what they need of it.
struct NodeDe<'de, 'p> {
    node: &'de Node,
    /// `key: value` when the node is a mapping's value.
    entry: Option<Range<usize>>,
    path: &'p Path<'p>,
}

impl<'de> NodeDe<'de, '_> {
    fn fail<T>(&self, error: Error) -> Result<T, Error> {
        Err(error.at(&self.node.span, self.path))
    }

    fn place<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.map_err(|e| e.at(&self.node.span, self.path))
    }

    fn scalar(&self) -> Option<&'de Scalar> {
        self.node.as_scalar()
    }

    fn is_null(&self) -> bool {
        self.scalar().is_some_and(|s| {
            s.plain && matches!(s.text.as_str(), "" | "~" | "null" | "Null" | "NULL")
        })
    }

    /// What the node is, for type errors.
    fn unexpected(&self) -> Unexpected<'de> {
        match &self.node.value {
            Value::Scalar(s) if !s.plain => Unexpected::Str(&s.text),
            Value::Scalar(s) => match typed(&s.text) {
                Plain::Null => Unexpected::Unit,
                Plain::Bool(b) => Unexpected::Bool(b),
                Plain::Unsigned(n) => Unexpected::Unsigned(n),
                Plain::Signed(n) => Unexpected::Signed(n),
                Plain::Float(n) => Unexpected::Float(n),
                Plain::Str => Unexpected::Str(&s.text),
            },
            Value::Sequence(_) => Unexpected::Seq,
            Value::Mapping(_) => Unexpected::Map,
        }
    }

    fn invalid<T, V: Visitor<'de>>(&self, visitor: &V) -> Result<T, Error> {
        self.fail(de::Error::invalid_type(self.unexpected(), visitor))
    }
}

/// A plain scalar's type under YAML 1.2's core schema.
enum Plain {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Str,
}

fn typed(text: &str) -> Plain {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Plain::Null,
        "true" | "True" | "TRUE" => Plain::Bool(true),
        "false" | "False" | "FALSE" => Plain::Bool(false),
        _ => text
            .parse()
            .map(Plain::Unsigned)
            .or_else(|_| text.parse().map(Plain::Signed))
            .or_else(|_| text.parse().map(Plain::Float))
            .unwrap_or(Plain::Str),
    }
}

/// A plain scalar read as a YAML 1.1 boolean, as rocprofv3's reader reads `yes` and `off`.
fn boolean(text: &str) -> Option<bool> {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Some(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

impl<'de> Deserializer<'de> for NodeDe<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match &self.node.value {
            Value::Scalar(s) if !s.plain => visitor.visit_str(&s.text),
            Value::Scalar(s) => match typed(&s.text) {
                Plain::Null => visitor.visit_unit(),
                Plain::Bool(b) => visitor.visit_bool(b),
                Plain::Unsigned(n) => visitor.visit_u64(n),
                Plain::Signed(n) => visitor.visit_i64(n),
                Plain::Float(n) => visitor.visit_f64(n),
                Plain::Str => visitor.visit_str(&s.text),
            },
            Value::Sequence(_) => return self.deserialize_seq(visitor),
            Value::Mapping(_) => return self.deserialize_map(visitor),
        };
        self.place(result)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self
            .scalar()
            .filter(|s| s.plain)
            .and_then(|s| boolean(&s.text))
        {
            Some(b) => self.place(visitor.visit_bool(b)),
            None => self.invalid(&visitor),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.scalar() {
            Some(s) if !self.is_null() => self.place(visitor.visit_str(&s.text)),
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.is_null() {
            self.place(visitor.visit_none())
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.is_null() {
            self.place(visitor.visit_unit())
        } else {
            self.invalid(&visitor)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Sequence(items) => {
                let access = SeqAccess {
                    items: items.iter().enumerate(),
                    path: self.path,
                };
                self.place(visitor.visit_seq(access))
            }
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Mapping(entries) => {
                let last_key = Cell::new(None);
                let access = MapAccess {
                    entries: entries.iter(),
                    value: None,
                    last_key: &last_key,
                    path: self.path,
                };
                visitor
                    .visit_map(access)
                    .map_err(|e| match last_key.take() {
                        // A repeated key is found between a key and its value.
                        Some(key) if e.kind == ErrorKind::Key => e.at(&key, self.path),
                        _ => e.at(&self.node.span, self.path),
                    })
            }
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == SPANNED {
            let span = self.entry.clone().unwrap_or_else(|| self.node.span.clone());
            return visitor.visit_map(SpannedAccess {
                span,
                node: Some(self),
                field: 0,
            });
        }
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.scalar() {
            Some(s) => self.place(visitor.visit_enum(s.text.as_str().into_deserializer())),
            None => self.invalid(&visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        unit_struct tuple tuple_struct
    }
}

struct SeqAccess<'de, 'p> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Node>>,
    path: &'p Path<'p>,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((i, node)) = self.items.next() else {
            return Ok(None);
        };
        let path = Path::Index(self.path, i);
        let de = NodeDe {
            node,
            entry: None,
            path: &path,
        };
        seed.deserialize(de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct MapAccess<'de, 'p> {
    entries: std::slice::Iter<'de, (Node, Node)>,
    value: Option<&'de (Node, Node)>,
    /// The span of the key read last, for faults serde finds after reading it.
    last_key: &'p Cell<Option<Range<usize>>>,
    path: &'p Path<'p>,
}

impl<'de> de::MapAccess<'de> for MapAccess<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(entry);
        self.last_key.set(Some(entry.0.span.clone()));
        let key = NodeDe {
            node: &entry.0,
            entry: None,
            path: self.path,
        };
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, value) = self.value.take().expect("serde asks for a key first");
        let path = Path::Key(self.path, key.key());
        let de = NodeDe {
            node: value,
            entry: Some(key.span.start..value.span.end.max(key.span.end)),
            path: &path,
        };
        seed.deserialize(de)
    }
}

/// Hands a [`Spanned`] its start, end and value.
struct SpannedAccess<'de, 'p> {
    span: Range<usize>,
    node: Option<NodeDe<'de, 'p>>,
    field: usize,
}

impl<'de> de::MapAccess<'de> for SpannedAccess<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(name) = SPANNED_FIELDS.get(self.field) else {
            return Ok(None);
        };
        seed.deserialize(name.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        self.field += 1;
        match self.field {
            1 => seed.deserialize(self.span.start.into_deserializer()),
            2 => seed.deserialize(self.span.end.into_deserializer()),
            _ => seed.deserialize(self.node.take().expect("the value is read once")),
        }
    }
}
