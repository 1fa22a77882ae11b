//! The C header and the Rust ABI types agree: a C program built with the header prints the
//! size, alignment and field offsets of each type and the value of each constant, and they
//! must equal what Rust says of its own.

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::Path;
use std::process::Command;

use rocflow_plugin::abi::{
    self, Batch, FFI_ArrowArray, FFI_ArrowSchema, Paths, Plugin, Sink, Transform,
};

/// What the header says: "name value" lines of `tests/layout.c`.
fn from_c() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("layout");
    let built = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("../include"))
        .arg(root.join("tests/layout.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler (cc) runs");
    assert!(built.success(), "layout.c builds against the header");
    let output = Command::new(&exe).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (name, value) = line.split_once(' ').unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// What Rust says, in the same form.
fn from_rust() -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut put = |name: &str, value: String| map.insert(name.to_owned(), value);
    macro_rules! layout {
        ($c:literal, $type:ty $(, $cfield:literal => $field:ident)*) => {
            put($c, format!("size {} align {}", size_of::<$type>(), align_of::<$type>()));
            $(put(concat!($c, ".", $cfield), offset_of!($type, $field).to_string());)*
        };
    }
    layout!("RocflowPlugin", Plugin, "abi_version" => abi_version, "name" => name,
        "version" => version, "description" => description, "transform" => transform,
        "sink" => sink, "last_error" => last_error);
    layout!("RocflowTransform", Transform, "create" => create, "process" => process,
        "destroy" => destroy);
    layout!("RocflowSink", Sink, "create" => create, "open" => open, "write" => write,
        "finish" => finish, "destroy" => destroy);
    layout!("RocflowBatch", Batch, "table" => table, "schema" => schema, "array" => array);
    layout!("RocflowPaths", Paths, "paths" => paths, "count" => count);
    layout!("ArrowSchema", FFI_ArrowSchema);
    layout!("ArrowArray", FFI_ArrowArray);
    put("ROCFLOW_PLUGIN_ABI_VERSION", abi::ABI_VERSION.to_string());
    put(
        "ROCFLOW_PLUGIN_ENTRY",
        abi::ENTRY.to_str().unwrap().to_owned(),
    );
    put("ROCFLOW_ROW_COLUMN", abi::ROW_COLUMN.to_owned());
    put("ROCFLOW_HOSTNAME_KEY", abi::HOSTNAME_KEY.to_owned());
    put("ROCFLOW_OK", abi::OK.to_string());
    put("ROCFLOW_ERROR", abi::ERROR.to_string());
    put("ROCFLOW_PANIC", abi::PANIC.to_string());
    map
}

#[test]
fn the_header_and_the_rust_types_agree() {
    let c = from_c();
    assert!(c.len() > 30, "layout.c printed {} lines", c.len());
    assert_eq!(from_rust(), c);
}
