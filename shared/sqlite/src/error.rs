//! The one mapping of SQLite's failures to the errors callers get.

use a2a_protocol::error::{A2aError, ErrorKind};

/// Maps an SQLite failure to the error a caller gets: a full disk or a file that cannot be written
/// is said as such (the operator can act on it), anything else is logged once and answered as an
/// internal error without the database's words.
pub(crate) fn db_error(what: &str, e: rusqlite::Error) -> A2aError {
    use rusqlite::ffi::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => {
            tracing::error!(operation = what, "the data directory is full: the change was not recorded");
            A2aError::new(
                ErrorKind::ResourceExhausted,
                "the server's storage is full: nothing was recorded; retry later",
            )
        }
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            tracing::error!(operation = what, error = %e, "the data file cannot be written");
            A2aError::internal("the server's storage cannot be written: nothing was recorded")
        }
        _ => {
            tracing::error!(operation = what, error = %e, "SQLite request failed");
            A2aError::internal(format!("storage unavailable ({what})"))
        }
    }
}
