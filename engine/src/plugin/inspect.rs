//! A plugin library checked without running any of its code, for `rocflow validate` and
//! `explain`: loading a library runs its constructors, whatever rocflow then calls. Its ELF
//! dynamic symbols tell whether it exports the ABI's entry function; the ABI version, the
//! kinds and the option checks are what that function returns, so only a load (`run`,
//! `replay`) checks those.

use std::path::Path;

use object::read::ReadCache;
use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
use rocflow_plugin::abi;

use super::Error;

/// Checks that `path` is a shared library exporting the plugin entry function, reading
/// only its headers and dynamic symbol table.
pub fn inspect(path: &Path) -> Result<(), Error> {
    let unloadable = |message: String| Error::Open {
        path: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| unloadable(e.to_string()))?;
    let cache = ReadCache::new(file);
    let library = object::File::parse(&cache)
        .map_err(|e| unloadable(format!("it is not an ELF shared library ({e})")))?;
    if library.kind() != ObjectKind::Dynamic {
        return Err(unloadable("it is not a shared library".into()));
    }
    let entry = abi::ENTRY.to_bytes();
    let exported = library.dynamic_symbols().any(|symbol| {
        symbol.name_bytes().is_ok_and(|name| name == entry)
            && symbol.kind() == SymbolKind::Text
            && symbol.is_definition()
            && symbol.is_global()
    });
    match exported {
        true => Ok(()),
        false => Err(Error::NoEntry {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_libraries_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("librocflow_plugin_text.so");
        std::fs::write(&path, "not a library").unwrap();
        let error = inspect(&path).unwrap_err().to_string();
        assert!(error.contains("it is not an ELF shared library"), "{error}");
        let missing = inspect(&dir.path().join("none.so")).unwrap_err();
        assert!(matches!(missing, Error::Open { .. }), "{missing}");
    }
}
