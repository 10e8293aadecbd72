//! The A2A wire model, 1.0 and 0.3: the types and the bounds of what a request may hold, the one
//! error type and its mapping table (JSON-RPC code, HTTP status, gRPC status, `ErrorInfo` reason),
//! version negotiation, operation names, SSE framing and decoding, the JSON-RPC id, the well-known
//! paths and the card file. No I/O: it builds for wasm32 as it is.

pub mod card_file;
pub mod error;
pub mod lines;
pub mod operation;
pub mod paths;
pub mod rpc_id;
pub mod sse;
pub mod types;
pub mod v03;
pub mod version;

pub use error::{A2aError, ErrorKind, Result};
