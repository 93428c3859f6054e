//! `InMemoryProgramCache` and `FileStreamProgramCache`, the program caches of
//! `cudacore_rs.utils`, over cuda-core's caches.
//!
//! As cuda.core's, they map keys (str or bytes; a str is its UTF-8 bytes, so `"k"` and `b"k"`
//! are one entry) to the compiled program's raw bytes (a cubin, PTX, LTO-IR): values go in as
//! bytes-like objects or `ObjectCode`s and come out as `bytes`. Each key is hashed, with
//! cuda-core's `CacheKey` builder, into the key cuda-core stores under.

use std::sync::Arc;

use crate::errors::*;
use crate::program::PyObjectCode;
use cuda_core::cache::{CacheKey, ProgramCache};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString, PyTuple};

/// The cuda-core key of a Python key: str (its UTF-8 bytes) or bytes.
fn key_of(key: &Bound<'_, PyAny>) -> PyResult<CacheKey> {
    let hashed = |bytes: &[u8]| {
        CacheKey::builder()
            .field("cudacore_rs.utils key", bytes)
            .finish()
    };
    if let Ok(s) = key.downcast::<PyString>() {
        return Ok(hashed(s.to_cow()?.as_bytes()));
    }
    if let Ok(b) = key.downcast::<PyBytes>() {
        return Ok(hashed(b.as_bytes()));
    }
    if let Ok(b) = key.downcast::<PyByteArray>() {
        return Ok(hashed(&b.to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "cache keys must be bytes or str, got {}",
        key.get_type().name()?
    )))
}

/// The bytes to store: of bytes, bytearray, memoryview, or an `ObjectCode` (its code).
fn value_of(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(code) = value.downcast::<PyObjectCode>() {
        return Ok(code.get().code.code().to_vec());
    }
    if let Ok(b) = value.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = value.downcast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if value.is_instance_of::<PyMemoryView>() {
        return Ok(value
            .call_method0("tobytes")?
            .downcast::<PyBytes>()?
            .as_bytes()
            .to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "cache values must be bytes-like or ObjectCode, got {}",
        value.get_type().name()?
    )))
}

/// `max_size_bytes`: None (no bound) or an int above 0.
fn max_size(max_size_bytes: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(value) = max_size_bytes.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyValueError::new_err(
            "max_size_bytes must be a positive int or None, got a bool",
        ));
    }
    match value.extract::<i128>() {
        Ok(v) if v > 0 => Ok(Some(u64::try_from(v).unwrap_or(u64::MAX))),
        _ => Err(PyValueError::new_err(format!(
            "max_size_bytes must be a positive int or None (0 would evict every write), got {}",
            value.repr()?
        ))),
    }
}

/// The methods both caches share, over `cache()` and `contains()`.
macro_rules! mapping_methods {
    ($ty:ty { $($own:tt)* }) => {
        #[pymethods]
        impl $ty {
            $($own)*

            /// The bytes stored under `key`; `KeyError` where there are none.
            fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
                let k = key_of(key)?;
                let cache = self.cache.clone();
                match py.allow_threads(move || cache.get(&k)) {
                    Some(bytes) => Ok(PyBytes::new(py, &bytes)),
                    None => Err(PyKeyError::new_err(key.clone().unbind())),
                }
            }

            /// The bytes stored under `key`, or `default` where there are none.
            #[pyo3(signature = (key, default = None))]
            fn get<'py>(
                &self,
                py: Python<'py>,
                key: &Bound<'py, PyAny>,
                default: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let k = key_of(key)?;
                let cache = self.cache.clone();
                match py.allow_threads(move || cache.get(&k)) {
                    Some(bytes) => Ok(PyBytes::new(py, &bytes).into_any()),
                    None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
                }
            }

            /// Stores `value` (bytes, bytearray, memoryview, or an ObjectCode's code) under
            /// `key`, replacing what was there.
            fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
                let k = key_of(key)?;
                let bytes = value_of(value)?;
                let cache = self.cache.clone();
                py.allow_threads(move || cache.put(&k, &bytes));
                Ok(())
            }

            /// Drops the entry of `key`; `KeyError` where there is none.
            fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
                let k = key_of(key)?;
                if !self.contains(py, &k) {
                    return Err(PyKeyError::new_err(key.clone().unbind()));
                }
                let cache = self.cache.clone();
                py.allow_threads(move || cache.remove(&k));
                Ok(())
            }

            /// Whether `key` has an entry (cuda.core's caches leave this out as racy across
            /// processes; prefer `get`).
            fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                let k = key_of(key)?;
                Ok(self.contains(py, &k))
            }

            /// Drops every entry.
            fn clear(&self, py: Python<'_>) -> PyResult<()> {
                let cache = self.cache.clone();
                py.allow_threads(move || cache.clear()).or_py(py)
            }

            /// Stores each `(key, value)` of a mapping or an iterable of pairs.
            fn update(slf: &Bound<'_, Self>, items: &Bound<'_, PyAny>) -> PyResult<()> {
                let items = match items.downcast::<PyDict>() {
                    Ok(dict) => dict.items().into_any(),
                    Err(_) => items.clone(),
                };
                for pair in items.try_iter()? {
                    let pair = pair?;
                    let pair = pair.downcast::<PyTuple>().map_err(|_| {
                        PyTypeError::new_err("update() takes a mapping or (key, value) pairs")
                    })?;
                    if pair.len() != 2 {
                        return Err(PyTypeError::new_err("update() takes (key, value) pairs"));
                    }
                    slf.get().__setitem__(slf.py(), &pair.get_item(0)?, &pair.get_item(1)?)?;
                }
                Ok(())
            }

            /// Nothing to release: the cache stays usable.
            fn close(&self) {}

            fn __enter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            #[pyo3(signature = (*_args))]
            fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
                false
            }
        }
    };
}

/// A program cache in this process's memory, as cuda.core's `InMemoryProgramCache`:
/// `max_size_bytes` (None: no bound) bounds the sum of the values' sizes, the least recently
/// used entries dropped first; a value larger than the bound is not kept. Shared safely by
/// threads.
#[pyclass(name = "InMemoryProgramCache", module = "cudacore_rs.utils", frozen)]
pub(crate) struct PyInMemoryProgramCache {
    cache: Arc<cuda_core::cache::InMemoryProgramCache>,
    max_size_bytes: Option<u64>,
}

impl PyInMemoryProgramCache {
    fn contains(&self, _py: Python<'_>, key: &CacheKey) -> bool {
        self.cache.contains(key)
    }
}

mapping_methods!(PyInMemoryProgramCache {
    #[new]
    #[pyo3(signature = (*, max_size_bytes = None))]
    fn new(max_size_bytes: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let max = max_size(max_size_bytes)?;
        let bound = max.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        Ok(PyInMemoryProgramCache {
            cache: Arc::new(cuda_core::cache::InMemoryProgramCache::new(bound)),
            max_size_bytes: max,
        })
    }

    /// The number of entries.
    fn __len__(&self) -> usize {
        self.cache.len()
    }

    /// The bound given, or None.
    #[getter]
    fn max_size_bytes(&self) -> Option<u64> {
        self.max_size_bytes
    }

    /// The sum of the stored values' sizes, in bytes.
    #[getter]
    fn size_bytes(&self) -> usize {
        self.cache.size_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "<InMemoryProgramCache entries={} size_bytes={}>",
            self.cache.len(),
            self.cache.size_bytes()
        )
    }
});

/// A program cache in a directory, one file per entry, as cuda.core's
/// `FileStreamProgramCache(path=None, *, max_size_bytes=None)`: shared by threads and
/// processes, and kept across runs. Writes are atomic (a temporary file renamed into place);
/// past `max_size_bytes` the least recently used entries are deleted.
///
/// `path` None is cuda-core's default directory (`$XDG_CACHE_HOME/cuda-core/programs`, else
/// `~/.cache/cuda-core/programs`), not cuda.core's. The directory is made `0700` and must be
/// the user's own and not writable by others (else `CUDAError`): its entries are loaded as
/// code. A cache that cannot be read or written only misses.
#[pyclass(name = "FileStreamProgramCache", module = "cudacore_rs.utils", frozen)]
pub(crate) struct PyFileStreamProgramCache {
    cache: Arc<cuda_core::cache::FileStreamProgramCache>,
    max_size_bytes: Option<u64>,
}

impl PyFileStreamProgramCache {
    fn contains(&self, py: Python<'_>, key: &CacheKey) -> bool {
        let cache = self.cache.clone();
        let key = *key;
        py.allow_threads(move || cache.get(&key).is_some())
    }
}

mapping_methods!(PyFileStreamProgramCache {
    #[new]
    #[pyo3(signature = (path = None, *, max_size_bytes = None))]
    fn new(
        py: Python<'_>,
        path: Option<std::path::PathBuf>,
        max_size_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max = max_size(max_size_bytes)?;
        let bound = max.unwrap_or(u64::MAX);
        let cache = py
            .allow_threads(move || match path {
                Some(path) => cuda_core::cache::FileStreamProgramCache::new(path, bound),
                None => cuda_core::cache::FileStreamProgramCache::open_default(bound),
            })
            .or_py(py)?;
        Ok(PyFileStreamProgramCache {
            cache: Arc::new(cache),
            max_size_bytes: max,
        })
    }

    /// The number of entry files in the directory now (other processes may change it).
    fn __len__(&self, py: Python<'_>) -> usize {
        let dir = self.cache.dir().to_path_buf();
        py.allow_threads(move || {
            std::fs::read_dir(dir).map_or(0, |entries| {
                entries
                    .flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_str()
                            .is_some_and(|n| CacheKey::from_hex(n).is_some())
                    })
                    .count()
            })
        })
    }

    /// The cache's directory.
    #[getter]
    fn path(&self) -> std::path::PathBuf {
        self.cache.dir().to_path_buf()
    }

    /// The bound given, or None.
    #[getter]
    fn max_size_bytes(&self) -> Option<u64> {
        self.max_size_bytes
    }

    fn __repr__(&self) -> String {
        format!("<FileStreamProgramCache {}>", self.cache.dir().display())
    }
});

/// Adds the caches to the module (re-exported by `cudacore_rs.utils`).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyInMemoryProgramCache>()?;
    module.add_class::<PyFileStreamProgramCache>()?;
    Ok(())
}
