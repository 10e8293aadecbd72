//! The gRPC binding (feature `grpc`, spec §10): `lf.a2a.v1.A2AService` served from the same
//! operations as JSON-RPC and HTTP+JSON. Messages are read and written through the descriptors of
//! the vendored proto (`shared/proto`, compiled at build time by protox) and the ProtoJSON mapping,
//! so the binding has no model of its own: a request becomes the JSON the other bindings decode, an
//! answer the JSON they encode. Authentication, the version and extensions come from the metadata
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

pub mod codec;
mod deadline;

use std::convert::Infallible;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde_json::Value;
use tonic::server::{Grpc, NamedService, ServerStreamingService, UnaryService};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::dispatch::{call, Op, Output};
use crate::engine::CallContext;
use crate::error::{A2aError, ErrorKind, ERROR_DOMAIN};
use crate::http::Service;
use crate::version;

pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";
/// Initial metadata of a streaming answer: the event id of its first message (see the module doc).
pub const FIRST_EVENT_ID: &str = "a2a-first-event-id";
/// The descriptor set of the vendored proto (for reflection, too).
pub const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a.fds"));

static POOL: LazyLock<Option<DescriptorPool>> = LazyLock::new(|| DescriptorPool::decode(DESCRIPTORS).ok());

fn method(name: &str) -> Option<MethodDescriptor> {
    POOL.as_ref()?.get_service_by_name(SERVICE_NAME)?.methods().find(|m| m.name() == name)
}

/// The A2A service as a tower service for tonic's router.
#[derive(Clone)]
pub struct A2aGrpc {
    service: Arc<Service>,
}

impl A2aGrpc {
    pub fn new(service: Arc<Service>) -> Self {
        Self { service }
    }
}

impl NamedService for A2aGrpc {
    const NAME: &'static str = SERVICE_NAME;
}

impl tower_service::Service<http::Request<tonic::body::Body>> for A2aGrpc {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let service = self.service.clone();
        let name = req.uri().path().rsplit('/').next().unwrap_or_default().to_string();
        Box::pin(async move {
            let Some(method) = method(&name) else {
                return Ok(Status::unimplemented(format!("{SERVICE_NAME} has no method {name:?}")).into_http());
            };
            let max_body = service.limits.max_body;
            let mut grpc = Grpc::new(codec::Raw).max_decoding_message_size(max_body);
            let response = if method.is_server_streaming() {
                grpc.server_streaming(Streaming(Call { service, method }), req).await
            } else {
                grpc.unary(Unary(Call { service, method }), req).await
            };
            Ok(too_large_as_resource_exhausted(response, max_body))
        })
    }
}

/// tonic refuses a message over the limit with OUT_OF_RANGE; the error table says
/// RESOURCE_EXHAUSTED (PAYLOAD_TOO_LARGE), as for an HTTP body over `--max-body`.
fn too_large_as_resource_exhausted(
    response: http::Response<tonic::body::Body>,
    max_body: usize,
) -> http::Response<tonic::body::Body> {
    let out_of_range = response.headers().get("grpc-status").is_some_and(|v| v == "11");
    if !out_of_range {
        return response;
    }
    let message = format!("request message exceeds the limit of {max_body} bytes");
    status(A2aError::new(ErrorKind::PayloadTooLarge, message)).into_http()
}

#[derive(Clone)]
struct Call {
    service: Arc<Service>,
    method: MethodDescriptor,
}

impl Call {
    /// Authenticates the caller, reads the request and runs the operation.
    async fn run(self, req: tonic::Request<Bytes>) -> Result<(Output, MethodDescriptor), Status> {
        let (metadata, _, body) = req.into_parts();
        let mut parts = http::Request::new(()).into_parts().0;
        parts.headers = metadata.into_headers();
        let principal = self.service.authenticate(&parts).await.map_err(status)?;
        // gRPC is a 1.0 binding: no version metadata means 1.0; any other version is refused.
        let version = match version::negotiate(&parts.headers, None) {
            _ if !parts.headers.contains_key("a2a-version") => version::Version::V1_0,
            Ok(version::Version::V0_3) => return Err(status(A2aError::version_not_supported("0.3"))),
            other => other.map_err(status)?,
        };
        let ctx: CallContext = self.service.call_context(&parts, principal, version).map_err(status)?;
        let json = read(&self.method.input(), body)?;
        let op = Op::decode_v1(self.method.name(), &json, "")
            .map_err(status)?
            .ok_or_else(|| Status::unimplemented(format!("{SERVICE_NAME}/{} is not served", self.method.name())))?;
        let (output, _) = call(&self.service.engine, &ctx, op).await.map_err(status)?;
        Ok((output, self.method))
    }
}

struct Unary(Call);

impl UnaryService<Bytes> for Unary {
    type Response = Bytes;
    type Future = BoxFuture<'static, Result<tonic::Response<Bytes>, Status>>;

    fn call(&mut self, req: tonic::Request<Bytes>) -> Self::Future {
        let call = self.0.clone();
        let deadline = deadline::of(req.metadata());
        Box::pin(deadline::within(deadline, async move {
            let (output, method) = call.run(req).await?;
            Ok(tonic::Response::new(write(&method.output(), output.into_json())?))
        }))
    }
}

struct Streaming(Call);

impl ServerStreamingService<Bytes> for Streaming {
    type Response = Bytes;
    type ResponseStream = BoxStream<'static, Result<Bytes, Status>>;
    type Future = BoxFuture<'static, Result<tonic::Response<Self::ResponseStream>, Status>>;

    fn call(&mut self, req: tonic::Request<Bytes>) -> Self::Future {
        let call = self.0.clone();
        let deadline = deadline::of(req.metadata());
        Box::pin(deadline::within(deadline, async move {
            let (output, method) = call.run(req).await?;
            let Output::Stream(events) = output else {
                return Err(Status::internal("the operation did not answer with a stream"));
            };
            // The first message's event id goes in the initial metadata, so the first message is
            // awaited before the headers are sent.
            let mut events = events.peekable();
            let first_id = match std::pin::Pin::new(&mut events).peek().await {
                Some(Ok(item)) => item.seq,
                _ => None,
            };
            let output = method.output();
            let stream = events.map(move |item| {
                let item = item.map_err(status)?;
                write(&output, serde_json::to_value(&item.event).unwrap_or(Value::Null))
            });
            let mut response = tonic::Response::new(deadline::bound(deadline, stream.boxed()));
            if let Some(id) = first_id {
                response.metadata_mut().insert(FIRST_EVENT_ID, id.into());
            }
            Ok(response)
        }))
    }
}

/// `json` (ProtoJSON) as the bytes of the proto message `name` (e.g. `lf.a2a.v1.SendMessageRequest`).
pub fn encode(name: &str, json: Value) -> Result<Bytes, Status> {
    write(&message(name)?, json)
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

/// A request message as the JSON the other bindings decode.
fn read(descriptor: &MessageDescriptor, body: Bytes) -> Result<String, Status> {
    let message = DynamicMessage::decode(descriptor.clone(), body)
        .map_err(|e| status(A2aError::parse(format!("the request is not a {}: {e}", descriptor.name()))))?;
    serde_json::to_string(&message).map_err(|e| Status::internal(format!("request to JSON: {e}")))
}

/// An answer (the JSON the other bindings encode) as a message of `descriptor`.
fn write(descriptor: &MessageDescriptor, json: Value) -> Result<Bytes, Status> {
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let message = DynamicMessage::deserialize_with_options(descriptor.clone(), json, &options)
        .map_err(|e| Status::internal(format!("answer as {}: {e}", descriptor.name())))?;
    Ok(Bytes::from(message.encode_to_vec()))
}

/// The error as a gRPC status: the code of the error table, an `ErrorInfo` detail.
pub fn status(err: A2aError) -> Status {
    let spec = err.spec();
    let code = match spec.grpc_status {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        _ => Code::Internal,
    };
    if err.kind == ErrorKind::Internal {
        crate::response::log_error(&err);
    }
    let metadata: std::collections::HashMap<String, String> = err.metadata.clone().into_iter().collect();
    let details = ErrorDetails::with_error_info(spec.reason, ERROR_DOMAIN, metadata);
    Status::with_error_details(code, err.message, details)
}

/// Serves the A2A service, gRPC health (`grpc.health.v1`) and server reflection on `listener` until
/// `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), String> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<A2aGrpc>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTORS)
        .build_v1()
        .map_err(|e| format!("gRPC reflection: {e}"))?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(A2aGrpc::new(service))
        .add_service(health_service)
        .add_service(reflection)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| format!("gRPC server: {e}"))
}
