//! The binding's messages and errors, shared by the server and the client: the descriptors of the
//! vendored proto (compiled at build time by protox), a message as ProtoJSON and back, and a
//! protocol error as a gRPC status with an `ErrorInfo` detail and back (the one error table).

use std::sync::LazyLock;

use bytes::Bytes;
use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use serde::Serialize;
use serde_json::{json, Value};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use a2a_protocol::error::{A2aError, ErrorKind, ERROR_DOMAIN};
#[cfg(feature = "server")]
use a2a_protocol::types::bounds::{Shape, MAX_PARTS, MAX_VALUES};

pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";
/// Initial metadata of a streaming answer: the event id of its first message (see the module doc).
pub const FIRST_EVENT_ID: &str = "a2a-first-event-id";
/// The descriptor set of the vendored proto (for reflection, too).
pub const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a.fds"));

static POOL: LazyLock<Option<DescriptorPool>> = LazyLock::new(|| DescriptorPool::decode(DESCRIPTORS).ok());

pub fn method(name: &str) -> Option<MethodDescriptor> {
    POOL.as_ref()?.get_service_by_name(SERVICE_NAME)?.methods().find(|m| m.name() == name)
}

/// `json` (ProtoJSON) as the bytes of the proto message `name` (e.g. `lf.a2a.v1.SendMessageRequest`).
pub fn encode(name: &str, json: Value) -> Result<Bytes, Status> {
    write(&message(name)?, &json)
}

/// The bytes of the proto message `name` as ProtoJSON.
pub fn decode(name: &str, bytes: Bytes) -> Result<Value, Status> {
    serde_json::from_str(&read(&message(name)?, bytes)?).map_err(|e| Status::internal(e.to_string()))
}

fn message(name: &str) -> Result<MessageDescriptor, Status> {
    POOL.as_ref()
        .and_then(|pool| pool.get_message_by_name(name))
        .ok_or_else(|| Status::internal(format!("no message {name}")))
}

/// Proto nesting allowed in a request (prost's own decoding limit; a JSON level of a `Struct` is two
/// or three proto levels).
#[cfg(feature = "server")]
const MAX_PROTO_DEPTH: usize = 100;
/// About what one field of a request costs on its way to the typed request, for the requests
/// budget (measured through a dynamic message: 100,000 one-field parts, 200,000 fields, took 76 MB
/// on their way to JSON; the direct reader builds only the JSON text, so this is an upper bound).
#[cfg(feature = "server")]
pub const DYNAMIC_PER_FIELD: usize = 512;

/// The shape of a request message, read from its wire form with the descriptors and nothing
/// allocated per field: every field counts as a value (limit [`MAX_VALUES`]), nesting is bounded,
/// and a message or an artifact may hold at most [`MAX_PARTS`] parts. Refused before the message
/// is decoded.
#[cfg(feature = "server")]
pub fn shape(descriptor: &MessageDescriptor, bytes: &[u8]) -> Result<Shape, A2aError> {
    let mut shape = Shape::default();
    walk(descriptor, bytes, 1, "", &mut shape)?;
    Ok(shape)
}

#[cfg(feature = "server")]
fn walk(
    descriptor: &MessageDescriptor,
    mut buf: &[u8],
    depth: usize,
    path: &str,
    shape: &mut Shape,
) -> Result<(), A2aError> {
    shape.depth = shape.depth.max(depth);
    if depth > MAX_PROTO_DEPTH {
        return Err(A2aError::invalid_request(format!("the request nests deeper than {MAX_PROTO_DEPTH} messages")));
    }
    let broken = || A2aError::parse(format!("the request is not a {}", descriptor.name()));
    let mut parts = 0usize;
    while !buf.is_empty() {
        let key = prost::encoding::decode_varint(&mut buf).map_err(|_| broken())?;
        shape.values += 1;
        if shape.values > MAX_VALUES {
            return Err(A2aError::invalid_request(format!(
                "the request holds more than {MAX_VALUES} fields (the limit per message)"
            )));
        }
        let skip = |buf: &mut &[u8], n: usize| {
            if buf.len() < n {
                return Err(broken());
            }
            *buf = &buf[n..];
            Ok(())
        };
        match key & 7 {
            0 => {
                prost::encoding::decode_varint(&mut buf).map_err(|_| broken())?;
            }
            1 => skip(&mut buf, 8)?,
            5 => skip(&mut buf, 4)?,
            2 => {
                let len = usize::try_from(prost::encoding::decode_varint(&mut buf).map_err(|_| broken())?)
                    .map_err(|_| broken())?;
                if buf.len() < len {
                    return Err(broken());
                }
                let (inner, rest) = buf.split_at(len);
                buf = rest;
                let field = u32::try_from(key >> 3).ok().and_then(|n| descriptor.get_field(n));
                let Some(field) = field else { continue };
                let prost_reflect::Kind::Message(message) = field.kind() else { continue };
                let here = if path.is_empty() {
                    field.json_name().to_string()
                } else {
                    format!("{path}.{}", field.json_name())
                };
                if message.full_name() == "lf.a2a.v1.Part" {
                    parts += 1;
                    if parts > MAX_PARTS {
                        return Err(A2aError::invalid_field(
                            &here,
                            format!("holds more than {MAX_PARTS} parts (the limit)"),
                        ));
                    }
                }
                walk(&message, inner, depth + 1, &here, shape)?;
            }
            _ => return Err(broken()),
        }
    }
    Ok(())
}

/// A request message as the JSON (ProtoJSON) the other bindings decode.
pub fn read(descriptor: &MessageDescriptor, body: Bytes) -> Result<String, Status> {
    let mut json = String::with_capacity(body.len() * 2 + 16);
    crate::proto_json::read::message(descriptor, &body, &mut json)
        .map_err(|e| status(A2aError::parse(format!("the request is not a {}: {e}", descriptor.name()))))?;
    Ok(json)
}

/// An answer (anything whose serde form is ProtoJSON: the typed answer, an event, a JSON value) as
/// a message of `descriptor`.
pub fn write<T: Serialize + ?Sized>(descriptor: &MessageDescriptor, answer: &T) -> Result<Bytes, Status> {
    crate::proto_json::write::message(descriptor, answer)
        .map(Bytes::from)
        .map_err(|e| Status::internal(format!("answer as {}: {e}", descriptor.name())))
}

/// The gRPC status codes by the names the error table uses.
const CODES: [(&str, Code); 16] = [
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

/// The error as a gRPC status: the code of the error table, an `ErrorInfo` detail.
pub fn status(err: A2aError) -> Status {
    let spec = err.spec();
    a2a_telemetry::spans::error(spec.reason);
    let code = CODES.iter().find(|(name, _)| *name == spec.grpc_status).map_or(Code::Internal, |(_, code)| *code);
    if err.kind == ErrorKind::Internal {
        tracing::error!(reason = spec.reason, message = %err.message, "request failed");
    }
    let metadata: std::collections::HashMap<String, String> = err.metadata.clone().into_iter().collect();
    let details = ErrorDetails::with_error_info(spec.reason, ERROR_DOMAIN, metadata);
    Status::with_error_details(code, err.message, details)
}

/// A status read back (a client's side): the protocol error it carries, by its `ErrorInfo` reason,
/// else by its code.
pub fn error_of(status: &Status) -> A2aError {
    let info = status.get_details_error_info().map(|info| json!({"reason": info.reason, "metadata": info.metadata}));
    let name = CODES.iter().find(|(_, code)| *code == status.code()).map_or("UNKNOWN", |(name, _)| *name);
    A2aError::from_grpc(name, status.message(), info.as_ref())
}
