//! Locking callbacks for an archive written from several threads: OTF2 guards the state its
//! writers share (the archive, its file substrate) with locks it makes through these, and
//! each thread keeps to writers of its own.

use std::cell::UnsafeCell;
use std::ffi::c_void;

use super::ffi::{self, CallbackCode, Lock};

/// OTF2's callbacks, backed by POSIX mutexes.
pub static CALLBACKS: ffi::LockingCallbacks = ffi::LockingCallbacks {
    release: None,
    create: Some(create),
    destroy: Some(destroy),
    lock: Some(lock),
    unlock: Some(unlock),
};

/// A mutex at a fixed address, as POSIX requires of one in use.
struct Mutex(UnsafeCell<libc::pthread_mutex_t>);

unsafe extern "C" fn create(_: *mut c_void, out: *mut Lock) -> CallbackCode {
    let mutex = Box::new(Mutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
    // SAFETY: OTF2 passes where the new lock goes; it hands it back to `destroy` once.
    unsafe { *out = Box::into_raw(mutex).cast() };
    ffi::CALLBACK_SUCCESS
}

unsafe extern "C" fn destroy(_: *mut c_void, lock: Lock) -> CallbackCode {
    // SAFETY: made by `create`, unlocked, and never used again.
    let mutex = unsafe { Box::from_raw(lock.cast::<Mutex>()) };
    // SAFETY: as above.
    unsafe { libc::pthread_mutex_destroy(mutex.0.get()) };
    ffi::CALLBACK_SUCCESS
}

unsafe extern "C" fn lock(_: *mut c_void, lock: Lock) -> CallbackCode {
    // SAFETY: a live lock of `create`.
    code(unsafe { libc::pthread_mutex_lock((*lock.cast::<Mutex>()).0.get()) })
}

unsafe extern "C" fn unlock(_: *mut c_void, lock: Lock) -> CallbackCode {
    // SAFETY: a live lock of `create`, held by this thread.
    code(unsafe { libc::pthread_mutex_unlock((*lock.cast::<Mutex>()).0.get()) })
}

fn code(errno: i32) -> CallbackCode {
    if errno == 0 {
        ffi::CALLBACK_SUCCESS
    } else {
        ffi::CALLBACK_ERROR
    }
}
