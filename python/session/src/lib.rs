//! `rocflow._session`: the extension under `rocflow.session` (which adds the context
//! manager and the decorator). Each call lets go of the GIL while the session works: a
//! phase's end waits for the runner to write its outputs.

use std::sync::Mutex;

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use rocflow_session::{Error, Session};

create_exception!(
    _session,
    SessionError,
    PyRuntimeError,
    "A session call failed; `kind` says which way (argument, state, runner, sdk, internal, library)."
);

fn raise(error: Error) -> PyErr {
    let kind = format!("{:?}", error.kind).to_lowercase();
    SessionError::new_err((error.message, kind))
}

/// The process's session (see `rocflow.session.Session`).
#[pyclass(name = "_Session", module = "rocflow._session", frozen)]
struct PySession {
    /// `None` once closed.
    inner: Mutex<Option<Session>>,
}

impl PySession {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Session) -> Result<T, Error> + Send,
    ) -> PyResult<T>
    where
        T: Send,
    {
        py.detach(|| {
            let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            match inner.as_ref() {
                Some(session) => f(session),
                None => Err(Error {
                    kind: rocflow_session::ErrorKind::State,
                    message: "the session is closed".into(),
                }),
            }
        })
        .map_err(raise)
    }
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (pipeline, sets, output=None))]
    fn new(
        py: Python<'_>,
        pipeline: String,
        sets: Vec<String>,
        output: Option<String>,
    ) -> PyResult<Self> {
        let session = py
            .detach(|| {
                let mut builder = Session::builder(pipeline);
                for set in &sets {
                    let (name, value) = set.split_once('=').unwrap_or((set, ""));
                    builder = builder.set(name, value);
                }
                if let Some(output) = output {
                    builder = builder.output(output);
                }
                builder.open()
            })
            .map_err(raise)?;
        Ok(PySession {
            inner: Mutex::new(Some(session)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, Session::start)
    }

    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, Session::stop)
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, Session::flush)
    }

    fn phase(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.with(py, |s| s.phase(&name))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let session = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
            match session {
                Some(session) => session.close(),
                None => Ok(()),
            }
        })
        .map_err(raise)
    }
}

#[pymodule]
fn _session(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    m.add("SessionError", m.py().get_type::<SessionError>())?;
    Ok(())
}
