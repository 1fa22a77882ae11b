//! A plugin library, loaded and checked against the ABI: its entry function exists, its
//! descriptor carries this rocflow's ABI version, and every function of the tables it
//! provides is there. After that, calls need no more checks than their status.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use rocflow_plugin::abi::{
    self, ABI_VERSION, CreateFn, DestroyFn, FinishFn, LastErrorFn, OpenFn, ProcessFn, Status,
    WriteFn,
};

use super::{Error, Kind};

/// A loaded plugin. Plugins stay loaded until the process ends: a library that has run
/// (made thread-locals, started threads) cannot be unloaded safely, and a process loads each
/// plugin once.
#[derive(Debug)]
pub struct Plugin {
    pub path: PathBuf,
    /// The plugin's own name, version and description.
    pub name: String,
    pub version: String,
    pub description: String,
    transform: Option<TransformFns>,
    sink: Option<SinkFns>,
    last_error: LastErrorFn,
}

/// A transform table with every function present.
#[derive(Debug)]
pub(crate) struct TransformFns {
    pub create: CreateFn,
    pub process: ProcessFn,
    pub destroy: DestroyFn,
}

/// A sink table with every function present.
#[derive(Debug)]
pub(crate) struct SinkFns {
    pub create: CreateFn,
    pub open: OpenFn,
    pub write: WriteFn,
    pub finish: FinishFn,
    pub destroy: DestroyFn,
}

/// Plugins loaded by this process (and those that failed to), by path.
static LOADED: LazyLock<Mutex<HashMap<PathBuf, Result<&'static Plugin, Error>>>> =
    LazyLock::new(Default::default);

impl Plugin {
    /// Loads the plugin at `path`, once per process.
    pub fn load(path: &Path) -> Result<&'static Plugin, Error> {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut loaded = LOADED.lock().expect("no panics while loading");
        loaded
            .entry(path.clone())
            .or_insert_with(|| open(&path).map(|plugin| &*Box::leak(Box::new(plugin))))
            .clone()
    }

    /// What the plugin provides.
    pub fn kinds(&self) -> Vec<Kind> {
        let transform = self.transform.as_ref().map(|_| Kind::Transform);
        let sink = self.sink.as_ref().map(|_| Kind::Sink);
        transform.into_iter().chain(sink).collect()
    }

    /// An error unless the plugin provides `kind`.
    pub fn require(&self, kind: Kind) -> Result<(), Error> {
        match kind {
            Kind::Transform => self.transform().map(drop),
            Kind::Sink => self.sink().map(drop),
        }
    }

    pub(crate) fn transform(&self) -> Result<&TransformFns, Error> {
        self.transform
            .as_ref()
            .ok_or_else(|| self.not_a(Kind::Transform))
    }

    pub(crate) fn sink(&self) -> Result<&SinkFns, Error> {
        self.sink.as_ref().ok_or_else(|| self.not_a(Kind::Sink))
    }

    fn not_a(&self, kind: Kind) -> Error {
        let kinds: Vec<String> = self.kinds().iter().map(Kind::to_string).collect();
        Error::NotA {
            plugin: self.name.clone(),
            kind,
            kinds: kinds.join(" and "),
        }
    }

    /// The outcome of a call that returned `status`, with the plugin's message.
    pub(crate) fn check(&self, status: Status) -> Result<(), Error> {
        if status == abi::OK {
            return Ok(());
        }
        // SAFETY: `last_error` takes no arguments and returns a string valid until the
        // plugin's next call on this thread, or null.
        let message = unsafe { string((self.last_error)()) }
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "no message".into());
        let plugin = self.name.clone();
        Err(match status {
            abi::PANIC => Error::Panicked { plugin, message },
            abi::ERROR => Error::Failed { plugin, message },
            other => Error::Failed {
                plugin,
                message: format!("{message} (an unknown status, {other})"),
            },
        })
    }

    /// Creates an instance with `create`, handing it the options as JSON.
    pub(crate) fn create(
        &'static self,
        create: CreateFn,
        destroy: DestroyFn,
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Instance, Error> {
        let json = serde_json::to_string(options).expect("JSON values serialize");
        let json = CString::new(json).expect("JSON escapes NUL characters");
        let mut pointer = std::ptr::null_mut();
        // SAFETY: `create` is the plugin's, called with a NUL-terminated string valid for
        // the call and a place for the instance, as the ABI says.
        let status = unsafe { create(json.as_ptr(), &mut pointer) };
        self.check(status)?;
        Ok(Instance { pointer, destroy })
    }
}

/// An instance a plugin created; dropping it destroys it.
#[derive(Debug)]
pub(crate) struct Instance {
    pub pointer: *mut c_void,
    destroy: DestroyFn,
}

// SAFETY: the ABI lets an instance be called from any thread, one thread at a time; an
// `Instance` is only called through `&mut` (or owned), which ensures that.
unsafe impl Send for Instance {}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: the instance came from the matching `create` and is destroyed once.
        unsafe { (self.destroy)(self.pointer) }
    }
}

/// Loads and checks a library.
fn open(path: &Path) -> Result<Plugin, Error> {
    let fail = |problem: String| Error::Malformed {
        path: path.to_path_buf(),
        problem,
    };
    // SAFETY: loading runs the library's initializers: a plugin is code the user asked
    // rocflow to run, as they ask it to run the application.
    let library = unsafe { libloading::Library::new(path) }.map_err(|e| Error::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    // SAFETY: the ABI gives the entry function this type.
    let entry = unsafe { library.get::<abi::Entry>(abi::ENTRY.to_bytes_with_nul()) }
        .map(|symbol| *symbol)
        .map_err(|_| Error::NoEntry {
            path: path.to_path_buf(),
        })?;
    // The library stays loaded, so its functions and descriptor stay valid.
    std::mem::forget(library);
    // SAFETY: the entry takes no arguments and returns the descriptor, or null.
    let descriptor = unsafe { entry() };
    // SAFETY: a non-null descriptor lives as long as the library, which is never unloaded.
    let descriptor =
        unsafe { descriptor.as_ref() }.ok_or_else(|| fail("its descriptor is null".into()))?;
    if descriptor.abi_version != ABI_VERSION {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found: descriptor.abi_version,
        });
    }
    // SAFETY: the descriptor's strings are null or NUL-terminated, and static.
    let text = |s: *const c_char| unsafe { string(s) }.unwrap_or_default();
    let name = text(descriptor.name);
    if name.is_empty() {
        return Err(fail("its descriptor has no name".into()));
    }
    let missing =
        |table: &str, function: &str| fail(format!("its {table} table has no `{function}`"));
    // SAFETY: a non-null table lives as long as the descriptor.
    let transform = unsafe { descriptor.transform.as_ref() }
        .map(|t| {
            Ok(TransformFns {
                create: t.create.ok_or_else(|| missing("transform", "create"))?,
                process: t.process.ok_or_else(|| missing("transform", "process"))?,
                destroy: t.destroy.ok_or_else(|| missing("transform", "destroy"))?,
            })
        })
        .transpose()?;
    // SAFETY: as for the transform table.
    let sink = unsafe { descriptor.sink.as_ref() }
        .map(|s| {
            Ok(SinkFns {
                create: s.create.ok_or_else(|| missing("sink", "create"))?,
                open: s.open.ok_or_else(|| missing("sink", "open"))?,
                write: s.write.ok_or_else(|| missing("sink", "write"))?,
                finish: s.finish.ok_or_else(|| missing("sink", "finish"))?,
                destroy: s.destroy.ok_or_else(|| missing("sink", "destroy"))?,
            })
        })
        .transpose()?;
    if transform.is_none() && sink.is_none() {
        return Err(fail("it is neither a transform nor a sink".into()));
    }
    Ok(Plugin {
        path: path.to_path_buf(),
        name,
        version: text(descriptor.version),
        description: text(descriptor.description),
        transform,
        sink,
        last_error: descriptor
            .last_error
            .ok_or_else(|| fail("its descriptor has no `last_error`".into()))?,
    })
}

/// A C string as text (invalid UTF-8 replaced).
///
/// # Safety
///
/// `s` is null or a NUL-terminated string valid for the call.
unsafe fn string(s: *const c_char) -> Option<String> {
    // SAFETY: see above.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}
