//! The gRPC server: `lf.a2a.v1.A2AService` as a tower service whose every method runs the operation
//! of the same name through the engine (authentication, version and tenant from the metadata), plus
//! gRPC health and server reflection.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use prost_reflect::MethodDescriptor;
use tonic::server::{Grpc, NamedService, ServerStreamingService, UnaryService};
use tonic::Status;

use super::wire::{method, read, shape, status, write, DESCRIPTORS, DYNAMIC_PER_FIELD, FIRST_EVENT_ID, SERVICE_NAME};
use super::{codec, deadline};
use a2a_engine::dispatch::{call, Op, Output};
use a2a_engine::engine::CallContext;
use a2a_http::inflight::held_bytes;
use a2a_http::response::hold_event;
use a2a_http::service::Authenticated;
use a2a_http::service::Service;
use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::version;

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
        use a2a_telemetry::spans::{self, Protocol};
        let service = self.service.clone();
        let name = req.uri().path().rsplit('/').next().unwrap_or_default().to_string();
        let span = spans::server(req.method(), req.uri().path(), req.headers(), Protocol::Grpc);
        let answered = span.clone();
        let content_type = proto_content_type(req.headers());
        let call = async move {
            let Some(method) = method(&name) else {
                return Ok(Status::unimplemented(format!("{SERVICE_NAME} has no method {name:?}")).into_http());
            };
            match content_type {
                ContentType::Proto => {}
                // The gRPC spec: a request that is not gRPC at all gets HTTP 415.
                ContentType::NotGrpc => {
                    let mut response = http::Response::new(tonic::body::Body::empty());
                    *response.status_mut() = http::StatusCode::UNSUPPORTED_MEDIA_TYPE;
                    return Ok(response);
                }
                ContentType::OtherCodec(ct) => {
                    let why = format!("content-type {ct:?}: this server reads protobuf only (application/grpc or application/grpc+proto)");
                    return Ok(status(A2aError::new(ErrorKind::ContentTypeNotSupported, why)).into_http());
                }
            }
            // Who is calling, before a byte of the message is read: a caller the service refuses
            // gets its answer without sending (or making the server hold) anything.
            let (mut parts, body) = req.into_parts();
            let outcome = service.authenticate(&parts).await;
            if let Err(e) = outcome {
                return Ok(status(e).into_http());
            }
            parts.extensions.insert(Authenticated(outcome));
            let req = http::Request::from_parts(parts, body);
            let max_body = service.limits.max_body;
            let mut grpc = Grpc::new(codec::Raw).max_decoding_message_size(max_body);
            let response = if method.is_server_streaming() {
                grpc.server_streaming(Streaming(Call { service, method }), req).await
            } else {
                grpc.unary(Unary(Call { service, method }), req).await
            };
            Ok(client_faults_as_the_table_says(response, max_body))
        };
        Box::pin(async move {
            let response = tracing::Instrument::instrument(call, span).await;
            if let Ok(response) = &response {
                // An error is answered trailers-only (its status in the headers); a success's status
                // comes in the trailers, after this.
                let code =
                    response.headers().get("grpc-status").and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(0);
                spans::grpc_outcome(&answered, code);
            }
            response
        })
    }
}

/// What a request's content type says of its messages.
enum ContentType {
    Proto,
    NotGrpc,
    /// gRPC with another codec (`application/grpc+json`): not read as protobuf.
    OtherCodec(String),
}

fn proto_content_type(headers: &http::HeaderMap) -> ContentType {
    let raw = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = raw.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "application/grpc" | "application/grpc+proto" => ContentType::Proto,
        other if other.starts_with("application/grpc") => ContentType::OtherCodec(other.to_string()),
        _ => ContentType::NotGrpc,
    }
}

/// What tonic itself answers when the request is at fault, before the binding sees the call, put
/// as the error table says: a message over the limit (OUT_OF_RANGE) is RESOURCE_EXHAUSTED
/// (PAYLOAD_TOO_LARGE), as for an HTTP body over `--max-body`; a call without its message, one cut
/// inside it, or an unknown compressed-flag (INTERNAL, which says the server failed) is
/// INVALID_ARGUMENT. (A compressed message without `grpc-encoding` stays INTERNAL: the gRPC
/// compression spec says so.)
fn client_faults_as_the_table_says(
    response: http::Response<tonic::body::Body>,
    max_body: usize,
) -> http::Response<tonic::body::Body> {
    let Some(answered) = Status::from_header_map(response.headers()) else { return response };
    let refused = match (answered.code(), answered.message()) {
        (tonic::Code::OutOfRange, _) => {
            A2aError::new(ErrorKind::PayloadTooLarge, format!("request message exceeds the limit of {max_body} bytes"))
        }
        (tonic::Code::Internal, "Missing request message.") => {
            A2aError::invalid_request("the call ended without its request message")
        }
        (tonic::Code::Internal, "Unexpected EOF decoding stream.") => {
            A2aError::invalid_request("the request message is cut short: the call ended inside it")
        }
        (tonic::Code::Internal, m)
            if m.starts_with("protocol error: received message with invalid compression flag") =>
        {
            A2aError::invalid_request("the request message's compressed-flag is neither 0 nor 1")
        }
        _ => return response,
    };
    status(refused).into_http()
}

#[derive(Clone)]
struct Call {
    service: Arc<Service>,
    method: MethodDescriptor,
}

impl Call {
    /// Authenticates the caller, reads the request and runs the operation.
    async fn run(self, req: tonic::Request<Bytes>) -> Result<(Output, MethodDescriptor), Status> {
        let (metadata, extensions, body) = req.into_parts();
        let mut parts = http::Request::new(()).into_parts().0;
        parts.headers = metadata.into_headers();
        parts.extensions = extensions;
        let principal = self.service.authenticate(&parts).await.map_err(status)?;
        // gRPC is a 1.0 binding: no version metadata (or an empty one) means 1.0; 0.3 had no gRPC
        // binding here, and any other version is refused.
        let version = match version::negotiate_or(&parts.headers, None, version::Version::V1_0) {
            Ok(version::Version::V0_3) => {
                let refused = A2aError::new(
                    ErrorKind::VersionNotSupported,
                    "the gRPC binding serves A2A 1.0: send a2a-version 1.0 (or none); A2A 0.3 is served over JSON-RPC and HTTP+JSON",
                );
                return Err(status(refused.with("version", "0.3")));
            }
            other => other.map_err(status)?,
        };
        let ctx: CallContext = self.service.call_context(&parts, principal, version).map_err(status)?;
        // What decoding builds is bounded, and held against the requests budget while it is built.
        let shape = shape(&self.method.input(), &body).map_err(status)?;
        let decoding =
            self.service.requests.hold(shape.values.saturating_mul(DYNAMIC_PER_FIELD)).await.map_err(status)?;
        let json = read(&self.method.input(), body)?;
        let op = Op::decode_v1(self.method.name(), &json, "")
            .map_err(status)?
            .ok_or_else(|| Status::unimplemented(format!("{SERVICE_NAME}/{} is not served", self.method.name())))?;
        drop((json, decoding));
        let (output, _) = call(&self.service.engine, &ctx, op).await.map_err(status)?;
        Ok((output, self.method))
    }
}

/// A status the binding made itself (an answer that does not encode) as the protocol's Internal
/// error.
fn internal(s: Status) -> A2aError {
    A2aError::internal(s.message().to_string())
}

struct Unary(Call);

impl UnaryService<Bytes> for Unary {
    type Response = Bytes;
    type Future = BoxFuture<'static, Result<tonic::Response<Bytes>, Status>>;

    fn call(&mut self, req: tonic::Request<Bytes>) -> Self::Future {
        let call = self.0.clone();
        let deadline = deadline::of(req.metadata());
        Box::pin(deadline::within(deadline, async move {
            let service = call.service.clone();
            let (output, method) = call.run(req).await?;
            let estimate = output.size_hint();
            let answer = service
                .encode_answer(output, estimate, |output, _| write(&method.output(), &output).map_err(internal))
                .await
                .map_err(status)?;
            Ok(tonic::Response::new(answer))
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
            let answers = call.service.answers.clone();
            let (output, method) = call.run(req).await?;
            let Output::Stream(events) = output else {
                return Err(Status::internal("the operation did not answer with a stream"));
            };
            // The first message's event id goes in the initial metadata, so the first message is
            // awaited before the headers are sent.
            let mut events = events.peekable();
            let first_id = match std::pin::Pin::new(&mut events).peek().await {
                Some(Ok(item)) => Some(item.seq),
                _ => None,
            };
            let output = method.output();
            let stream = events.then(move |item| {
                let (output, answers) = (output.clone(), answers.clone());
                async move {
                    let item = item.map_err(status)?;
                    let held = hold_event(&answers, &item.event).await.map_err(status)?;
                    let bytes = write(&output, &item.event)?;
                    let Some(mut held) = held else { return Ok(bytes) };
                    answers.fit(&mut held, bytes.len()).await.map_err(status)?;
                    Ok(held_bytes(bytes, held))
                }
            });
            let mut response = tonic::Response::new(deadline::bound(deadline, stream.boxed()));
            if let Some(id) = first_id {
                response.metadata_mut().insert(FIRST_EVENT_ID, id.into());
            }
            Ok(response)
        }))
    }
}

/// The A2A service, gRPC health (`grpc.health.v1`) and server reflection, routed by service name.
pub async fn routes(service: Arc<Service>) -> Result<tonic::service::Routes, String> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<A2aGrpc>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTORS)
        .build_v1()
        .map_err(|e| format!("gRPC reflection: {e}"))?;
    Ok(tonic::service::Routes::new(A2aGrpc::new(service)).add_service(health_service).add_service(reflection).prepare())
}

/// Serves the gRPC binding alone on `listener` until `shutdown` resolves, with the default
/// server limits (a2a-local serves it beside HTTP from one [`a2a_http::server::Server`], which
/// shares one connection budget between both).
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    crate::listener::serve(
        a2a_http::server::Server::new(service, a2a_http::server::ServerLimits::default()),
        listener,
        shutdown,
    )
    .await
}
