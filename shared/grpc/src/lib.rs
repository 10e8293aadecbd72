//! The gRPC binding (spec §10): `lf.a2a.v1.A2AService` served (feature `server`) from the same
//! operations as JSON-RPC and HTTP+JSON, and called by the client (`a2a-client`, feature `grpc`).
//! Messages are read and written through the descriptors of
//! the vendored proto (`proto/`, compiled at build time by protox) and the ProtoJSON mapping,
//! so the binding has no model of its own: a request's wire bytes become, in one pass, the JSON
//! text the other bindings decode, and an answer is serialized from its typed value straight into
//! wire bytes ([`proto_json`]; no dynamic message in between). Authentication, the version and extensions come from the metadata
//! (the same names as the headers); errors are `google.rpc.Status` with an `ErrorInfo` detail, from
//! the one error table.
//!
//! Limits: a request message over `--max-body` is refused with RESOURCE_EXHAUSTED before it is
//! buffered further; a client deadline (`grpc-timeout`) ends a unary call, or a stream, with
//! DEADLINE_EXCEEDED (the task goes on, as when an HTTP client goes away). Resumption: a streaming
//! answer's initial metadata carries `a2a-first-event-id`, the event id of its first message; each
//! further message is the next id. A client that lost the stream after `n` messages calls
//! SubscribeToTask with `last-event-id: first + n - 1` and gets exactly the events it missed, as
//! `Last-Event-ID` does for SSE.
//!
//! - [`wire`]: descriptors, messages as ProtoJSON, errors as statuses (server and client).
//! - `server` (feature `server`): the service, health and reflection; `deadline`: `grpc-timeout`;
//!   [`listener`]: the HTTP/2 listener under the server's limits.
//! - [`proto_json`]: ProtoJSON to and from the wire format through the descriptors.
//! - [`codec`]: message bytes through tonic untouched.

pub mod codec;
#[cfg(feature = "server")]
mod deadline;
#[cfg(feature = "server")]
pub mod listener;
pub mod proto_json;
#[cfg(feature = "server")]
mod server;
pub mod wire;

#[cfg(feature = "server")]
pub use server::{routes, serve, A2aGrpc};
pub use wire::{decode, encode, error_of, status, DESCRIPTORS, FIRST_EVENT_ID, SERVICE_NAME};
