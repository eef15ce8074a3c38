//! Manifest errors: every one names the file, line, column and key it is about.

use std::path::PathBuf;

/// A manifest that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("{}: cannot read manifest: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The text is not valid (TOML syntax, unknown key, wrong type, missing key, bad rule).
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A managed file (or its folder) that someone other than root could have written.
    #[error(
        "{}: refused as managed configuration: {problem} (a managed file and its folder must \
         be owned by root and writable by no one else: `chown root` and `chmod go-w` it)",
        path.display()
    )]
    Managed { path: PathBuf, problem: String },
}

impl ManifestError {
    /// Builds an `Invalid` error from a byte offset into `source`.
    pub(crate) fn at(path: &std::path::Path, source: &str, offset: usize, message: String) -> Self {
        let (line, column) = line_col(source, offset);
        ManifestError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            message,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before
        .get(line_start..)
        .map(|s| s.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}
