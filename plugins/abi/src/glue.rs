//! The C functions [`export_plugin!`](crate::export_plugin) puts in a Rust plugin's
//! descriptor: each turns its arguments into Rust values, calls the plugin's trait method,
//! and catches what comes back (an error or a panic) as a status and a message, so nothing
//! unwinds into rocflow.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Once;

use serde::de::DeserializeOwned;

use crate::abi::{self, FFI_ArrowArray, FFI_ArrowSchema, Status};
use crate::batch::{Check, export, import};
use crate::plugin::{Batch, Result, Sink, Transform};

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Set while rocflow's call runs on this thread.
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    /// Where the call's panic happened.
    static PANICKED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Makes panics in calls quiet: their message and place go to rocflow, which reports them,
/// instead of to stderr. (A plugin has a standard library, and so a panic hook, of its
/// own; panics outside calls still reach the hook it had.)
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| match IN_CALL.get() {
            true => PANICKED_AT.set(info.location().map(ToString::to_string)),
            false => previous(info),
        }));
    });
}

/// `last_error()`: valid until the next call into the plugin on this thread.
pub extern "C" fn last_error() -> *const c_char {
    LAST_ERROR.with(|message| message.borrow().as_ptr())
}

/// Runs one call of the plugin, catching its error or panic.
fn boundary(call: impl FnOnce() -> Result<()>) -> Status {
    quiet_panics();
    IN_CALL.set(true);
    let outcome = catch_unwind(AssertUnwindSafe(call));
    IN_CALL.set(false);
    let (status, message) = match outcome {
        Ok(Ok(())) => return abi::OK,
        Ok(Err(error)) => (abi::ERROR, chain(&*error)),
        Err(panic) => {
            let mut message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            if let Some(place) = PANICKED_AT.take() {
                message = format!("{message} (at {place})");
            }
            (abi::PANIC, message)
        }
    };
    let message = CString::new(message.replace('\0', " ")).expect("NULs replaced");
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    status
}

/// An error with its sources: "options: unknown field `x` …".
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Reads a C string argument.
///
/// # Safety
///
/// `text` is a NUL-terminated string, valid for the call (the ABI promises it).
unsafe fn text<'a>(text: *const c_char) -> Result<&'a str> {
    // SAFETY: see above.
    Ok(unsafe { CStr::from_ptr(text) }.to_str()?)
}

/// The plugin's options from the pipeline's JSON object.
///
/// # Safety
///
/// As for [`text`].
unsafe fn options<O: DeserializeOwned>(json: *const c_char) -> Result<O> {
    // SAFETY: as for `text`.
    let json = unsafe { text(json) }?;
    // Through a `Value`: rocflow points at the options in the pipeline, and a position in
    // the JSON it made from them would mislead.
    let value: serde_json::Value = serde_json::from_str(json)?;
    serde_json::from_value(value).map_err(|e| format!("options: {e}").into())
}

/// Takes an input batch, moving its array out (the host releases the schema).
///
/// # Safety
///
/// `batch` points to a batch the host lends for the call.
unsafe fn receive(batch: *mut abi::Batch) -> Result<Batch> {
    // SAFETY: the host lends the batch for the call, and nothing else uses it meanwhile.
    let batch = unsafe { &mut *batch };
    // SAFETY: the table is a NUL-terminated string, as the batch.
    let table = unsafe { text(batch.table) }?.to_owned();
    // SAFETY: a valid array; taking it leaves a released one behind, as the ABI's move does.
    let array = unsafe { FFI_ArrowArray::from_raw(&mut batch.array) };
    // SAFETY: rocflow exports arrays of their schema's type.
    let records = unsafe { import(&batch.schema, array, Check::Trusted) }?;
    Ok(Batch { table, records })
}

/// A plugin instance of type `T`, as the host holds it.
///
/// # Safety
///
/// `instance` came from this plugin's `create` for `T`, is not destroyed, and is used by one
/// thread at a time (the ABI promises both).
unsafe fn instance<'a, T>(instance: *mut c_void) -> &'a mut T {
    // SAFETY: see above.
    unsafe { &mut *instance.cast::<T>() }
}

/// Moves a new instance to where the host asked for it.
///
/// # Safety
///
/// `out` is valid for a write (the ABI promises it).
unsafe fn hand_over<T>(out: *mut *mut c_void, value: T) {
    // SAFETY: see above.
    unsafe { out.write(Box::into_raw(Box::new(value)).cast()) }
}

/// Drops an instance (the tables' `destroy`); a panic in its `Drop` goes no further.
///
/// # Safety
///
/// As for [`instance`], and it is not used again: the host destroys each instance once,
/// after its last call.
unsafe extern "C" fn destroy<T>(instance: *mut c_void) {
    // SAFETY: see above; the box is the one `hand_over` made.
    let boxed = unsafe { Box::from_raw(instance.cast::<T>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

/// The transform table of a [`Transform`].
pub struct TransformGlue<T>(PhantomData<T>);

impl<T: Transform> TransformGlue<T> {
    pub const FNS: abi::Transform = abi::Transform {
        create: Some(Self::create),
        process: Some(Self::process),
        destroy: Some(destroy::<T>),
    };

    unsafe extern "C" fn create(json: *const c_char, out: *mut *mut c_void) -> Status {
        boundary(|| {
            // SAFETY: `json` is the options string the ABI promises.
            let plugin = T::new(unsafe { options(json) }?)?;
            // SAFETY: `out` is where the ABI asks for the instance.
            unsafe { hand_over(out, plugin) };
            Ok(())
        })
    }

    unsafe extern "C" fn process(
        plugin: *mut c_void,
        input: *mut abi::Batch,
        out_schema: *mut FFI_ArrowSchema,
        out_array: *mut FFI_ArrowArray,
    ) -> Status {
        boundary(|| {
            // SAFETY: `input` is the batch the host lends for the call.
            let batch = unsafe { receive(input) }?;
            // SAFETY: `plugin` is an instance `create` made for `T`, called by one thread.
            let output = unsafe { instance::<T>(plugin) }.process(batch)?;
            let (schema, array) = export(output)?;
            // SAFETY: the host passes released structs to fill, which need no drop.
            unsafe {
                out_schema.write(schema);
                out_array.write(array);
            }
            Ok(())
        })
    }
}

/// A sink instance: options until it is opened, then the sink, then what it wrote.
enum SinkState<S: Sink> {
    Created(S::Options),
    Open(S),
    /// The paths written and the array of pointers to them, held (never read here) for the
    /// host, which reads them through what `finish` handed out.
    Finished {
        _paths: Vec<CString>,
        _pointers: Vec<*const c_char>,
    },
    /// A transition failed; the host will not call again but to destroy.
    Broken,
}

/// The sink table of a [`Sink`].
pub struct SinkGlue<S>(PhantomData<S>);

impl<S: Sink> SinkGlue<S> {
    pub const FNS: abi::Sink = abi::Sink {
        create: Some(Self::create),
        open: Some(Self::open),
        write: Some(Self::write),
        finish: Some(Self::finish),
        destroy: Some(destroy::<SinkState<S>>),
    };

    unsafe extern "C" fn create(json: *const c_char, out: *mut *mut c_void) -> Status {
        boundary(|| {
            // SAFETY: `json` is the options string the ABI promises.
            let options: S::Options = unsafe { options(json) }?;
            // SAFETY: `out` is where the ABI asks for the instance.
            unsafe { hand_over(out, SinkState::<S>::Created(options)) };
            Ok(())
        })
    }

    unsafe extern "C" fn open(plugin: *mut c_void, path: *const c_char) -> Status {
        boundary(|| {
            // SAFETY: `plugin` is an instance `create` made for `S`, called by one thread.
            let state = unsafe { instance::<SinkState<S>>(plugin) };
            // SAFETY: the path is a NUL-terminated string, valid for the call.
            let path = Path::new(unsafe { text(path) }?);
            match std::mem::replace(state, SinkState::Broken) {
                SinkState::Created(options) => *state = SinkState::Open(S::open(options, path)?),
                _ => return Err("the sink is opened twice".into()),
            }
            Ok(())
        })
    }

    unsafe extern "C" fn write(plugin: *mut c_void, batch: *mut abi::Batch) -> Status {
        boundary(|| {
            // SAFETY: `plugin` is an instance `create` made for `S`, called by one thread.
            let SinkState::Open(sink) = (unsafe { instance::<SinkState<S>>(plugin) }) else {
                return Err("the sink is not open".into());
            };
            // SAFETY: `batch` is the batch the host lends for the call.
            sink.write(unsafe { receive(batch) }?)
        })
    }

    unsafe extern "C" fn finish(plugin: *mut c_void, written: *mut abi::Paths) -> Status {
        boundary(|| {
            // SAFETY: `plugin` is an instance `create` made for `S`, called by one thread.
            let state = unsafe { instance::<SinkState<S>>(plugin) };
            let SinkState::Open(sink) = std::mem::replace(state, SinkState::Broken) else {
                return Err("the sink is not open".into());
            };
            let paths = sink
                .finish()?
                .into_iter()
                .map(|p: PathBuf| CString::new(p.into_os_string().into_encoded_bytes()))
                .collect::<Result<Vec<CString>, _>>()?;
            let pointers: Vec<*const c_char> = paths.iter().map(|p| p.as_ptr()).collect();
            // SAFETY: the host passes a `Paths` to fill; the strings live in the instance.
            unsafe {
                written.write(abi::Paths {
                    paths: pointers.as_ptr(),
                    count: pointers.len(),
                })
            };
            *state = SinkState::Finished {
                _paths: paths,
                _pointers: pointers,
            };
            Ok(())
        })
    }
}
