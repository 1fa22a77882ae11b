//! The thread-trace services' shader-data callback, in each form an SDK calls it: SDK 1.0
//! passes one shader engine's data as separate arguments, 1.3.2 adds the chunk's flags
//! before the user data, and 1.3.5 bundles everything in
//! `rocprofiler_thread_trace_shader_data_t`, passed by value. A callback of the wrong form
//! reads its user data (a dispatch's id) from the wrong register, so the tool hands the
//! SDK the form of the version `rocprofiler_configure` names, and the simulated SDK calls
//! the form of the version it reports.

use std::ffi::c_void;

use super::{Handle, Layout, UserData};
use crate::sdk::{Release, SdkVersion, THREAD_TRACE_BUNDLE, THREAD_TRACE_FLAGS};

abi! {
    /// `rocprofiler_thread_trace_shader_data_t` (SDK 1.3.5): one chunk of a shader
    /// engine's trace. Its valid bytes start `read_offset` into `data`. Later SDKs append
    /// fields, and `size` says how many bytes the SDK filled.
    pub struct ShaderDataBundle = ["rocprofiler_thread_trace_shader_data_t"] {
        size: u64,
        data: *mut c_void,
        data_size: u64,
        shader_engine_id: i64,
        chunk_index: u64,
        read_offset: u64,
        agent: Handle,
        flags: i32,
    }
}

/// `ROCPROFILER_THREAD_TRACE_SHADER_DATA_FLAGS_END`: the shader engine's last chunk.
pub const SHADER_DATA_END: i32 = 1;

/// SDK 1.0's callback: agent, shader engine, data, its size, user data.
pub type ShaderDataArgumentsFn = unsafe extern "C" fn(
    agent: Handle,
    shader_engine: i64,
    data: *mut c_void,
    size: usize,
    user: UserData,
);

/// SDK 1.3.2's callback: the chunk's flags come before the user data.
pub type ShaderDataFlaggedFn = unsafe extern "C" fn(
    agent: Handle,
    shader_engine: i64,
    data: *mut c_void,
    size: usize,
    flags: i32,
    user: UserData,
);

/// SDK 1.3.5's callback: the bundle, by value, and the user data.
pub type ShaderDataBundleFn = unsafe extern "C" fn(data: ShaderDataBundle, user: UserData);

/// A shader-data callback as the configure functions take it: a function pointer whose
/// real type is the one of the SDK's version ([`ShaderDataForm`]).
pub type ErasedShaderDataFn = unsafe extern "C" fn();

/// Which form of the shader-data callback an SDK calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderDataForm {
    Arguments,
    Flagged,
    Bundled,
}

impl ShaderDataForm {
    /// The form SDK `version` calls.
    pub fn of(version: SdkVersion) -> ShaderDataForm {
        let since = |release: Release| release.sdk <= version;
        if since(THREAD_TRACE_BUNDLE) {
            ShaderDataForm::Bundled
        } else if since(THREAD_TRACE_FLAGS) {
            ShaderDataForm::Flagged
        } else {
            ShaderDataForm::Arguments
        }
    }
}

/// A shader-data callback of one form.
#[derive(Debug, Clone, Copy)]
pub enum ShaderDataCallback {
    Arguments(ShaderDataArgumentsFn),
    Flagged(ShaderDataFlaggedFn),
    Bundled(ShaderDataBundleFn),
}

impl ShaderDataCallback {
    pub fn form(self) -> ShaderDataForm {
        match self {
            ShaderDataCallback::Arguments(_) => ShaderDataForm::Arguments,
            ShaderDataCallback::Flagged(_) => ShaderDataForm::Flagged,
            ShaderDataCallback::Bundled(_) => ShaderDataForm::Bundled,
        }
    }

    /// The callback as the configure functions take it.
    pub fn erase(self) -> ErasedShaderDataFn {
        // SAFETY: function pointers of any signature have one size and representation;
        // `typed` gives the type back before a call.
        unsafe {
            match self {
                ShaderDataCallback::Arguments(f) => {
                    std::mem::transmute::<ShaderDataArgumentsFn, ErasedShaderDataFn>(f)
                }
                ShaderDataCallback::Flagged(f) => {
                    std::mem::transmute::<ShaderDataFlaggedFn, ErasedShaderDataFn>(f)
                }
                ShaderDataCallback::Bundled(f) => {
                    std::mem::transmute::<ShaderDataBundleFn, ErasedShaderDataFn>(f)
                }
            }
        }
    }

    /// The callback a configure function was given, typed by the SDK's form.
    ///
    /// # Safety
    /// `f` is a callback of the form `form` (the caller's SDK version's).
    pub unsafe fn typed(form: ShaderDataForm, f: ErasedShaderDataFn) -> ShaderDataCallback {
        // SAFETY: the caller's promise.
        unsafe {
            match form {
                ShaderDataForm::Arguments => ShaderDataCallback::Arguments(std::mem::transmute::<
                    ErasedShaderDataFn,
                    ShaderDataArgumentsFn,
                >(f)),
                ShaderDataForm::Flagged => ShaderDataCallback::Flagged(std::mem::transmute::<
                    ErasedShaderDataFn,
                    ShaderDataFlaggedFn,
                >(f)),
                ShaderDataForm::Bundled => ShaderDataCallback::Bundled(std::mem::transmute::<
                    ErasedShaderDataFn,
                    ShaderDataBundleFn,
                >(f)),
            }
        }
    }

    /// Hands `data`, a shader engine's whole trace, to the callback in its form: in one
    /// call before 1.3.5; in two numbered chunks, the last flagged, in the bundled form,
    /// as an SDK whose buffer filled during the trace hands it over.
    ///
    /// # Safety
    /// The callback is one the tool gave for `user`.
    pub unsafe fn call(self, agent: Handle, shader_engine: u32, data: &mut [u8], user: UserData) {
        let shader_engine = i64::from(shader_engine);
        // SAFETY: the caller's promise; `data` lives until the calls return.
        unsafe {
            match self {
                ShaderDataCallback::Arguments(f) => f(
                    agent,
                    shader_engine,
                    data.as_mut_ptr().cast(),
                    data.len(),
                    user,
                ),
                ShaderDataCallback::Flagged(f) => f(
                    agent,
                    shader_engine,
                    data.as_mut_ptr().cast(),
                    data.len(),
                    SHADER_DATA_END,
                    user,
                ),
                ShaderDataCallback::Bundled(f) => {
                    let (first, last) = data.split_at_mut(data.len() / 2);
                    for (chunk_index, chunk) in [first, last].into_iter().enumerate() {
                        let flags = if chunk_index == 1 { SHADER_DATA_END } else { 0 };
                        let bundle = ShaderDataBundle {
                            size: std::mem::size_of::<ShaderDataBundle>() as u64,
                            data: chunk.as_mut_ptr().cast(),
                            data_size: chunk.len() as u64,
                            shader_engine_id: shader_engine,
                            chunk_index: chunk_index as u64,
                            read_offset: 0,
                            agent,
                            flags,
                        };
                        f(bundle, user);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn each_release_has_its_form() {
        for (version, form) in [
            (SdkVersion(1, 0, 0), ShaderDataForm::Arguments),
            (SdkVersion(1, 3, 0), ShaderDataForm::Arguments),
            (SdkVersion(1, 3, 2), ShaderDataForm::Flagged),
            (SdkVersion(1, 3, 4), ShaderDataForm::Flagged),
            (SdkVersion(1, 3, 5), ShaderDataForm::Bundled),
            (SdkVersion(1, 4, 1), ShaderDataForm::Bundled),
        ] {
            assert_eq!(ShaderDataForm::of(version), form, "SDK {version}");
        }
    }

    /// What a callback got: agent, shader engine, bytes, user data.
    type Got = (u64, i64, Vec<u8>, u64);

    static GOT: Mutex<Vec<Got>> = Mutex::new(Vec::new());

    fn got(agent: Handle, shader_engine: i64, data: *mut c_void, size: usize, user: UserData) {
        // SAFETY: the caller's `size` bytes at `data`.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec();
        let mut all = GOT.lock().unwrap();
        all.push((agent.handle, shader_engine, bytes, user.value));
    }

    unsafe extern "C" fn arguments(a: Handle, se: i64, d: *mut c_void, n: usize, u: UserData) {
        got(a, se, d, n, u);
    }

    unsafe extern "C" fn flagged(
        a: Handle,
        se: i64,
        d: *mut c_void,
        n: usize,
        f: i32,
        u: UserData,
    ) {
        assert_eq!(f, SHADER_DATA_END);
        got(a, se, d, n, u);
    }

    /// Joins the chunks, in order, into one call's worth; the last is flagged.
    unsafe extern "C" fn bundled(b: ShaderDataBundle, u: UserData) {
        assert_eq!(b.size, 64);
        assert_eq!(
            b.flags,
            if b.chunk_index == 1 {
                SHADER_DATA_END
            } else {
                0
            }
        );
        if b.chunk_index == 0 {
            got(b.agent, b.shader_engine_id, b.data, b.data_size as usize, u);
            return;
        }
        // SAFETY: the caller's `data_size` bytes at `data`.
        let bytes =
            unsafe { std::slice::from_raw_parts(b.data.cast::<u8>(), b.data_size as usize) };
        GOT.lock()
            .unwrap()
            .last_mut()
            .unwrap()
            .2
            .extend_from_slice(bytes);
    }

    /// A callback erased as a configure function takes it, typed back by its form and
    /// called, gets the same data and user data in every form.
    #[test]
    fn every_form_hands_over_the_data_and_the_user_data() {
        for callback in [
            ShaderDataCallback::Arguments(arguments),
            ShaderDataCallback::Flagged(flagged),
            ShaderDataCallback::Bundled(bundled),
        ] {
            // SAFETY: typed back by its own form.
            let typed = unsafe { ShaderDataCallback::typed(callback.form(), callback.erase()) };
            assert_eq!(typed.form(), callback.form());
            let mut data = *b"trace bytes";
            // SAFETY: the callbacks above read the data only.
            unsafe { typed.call(Handle { handle: 7 }, 3, &mut data, UserData { value: 42 }) };
            let got = GOT.lock().unwrap().pop();
            assert_eq!(
                got,
                Some((7, 3, b"trace bytes".to_vec(), 42)),
                "{:?}",
                callback.form()
            );
        }
    }
}
