//! API Gateway HTTP API (payload v2) and Function URL events in, protocol responses out. A
//! per-operation function serves only its [`Endpoint`]; anything else routed to it is a 404 that
//! names the function's operation. Streams are sent with Lambda response streaming by the
//! `http-stream` function ([`serve_streaming`]); a buffered function that is asked for a stream
//! (a JSON-RPC streaming method on `http-jsonrpc`) sends the whole SSE body at the end of the turn.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http::Method;
use http_body_util::StreamBody;
use hyper::body::Frame;
use lambda_http::request::RequestContext;
use lambda_http::{Body as LambdaBody, Request, RequestExt, Response};
use tracing::Instrument;

use a2a_engine::auth::GatewayClaims;
use a2a_engine::card::is_public_path;
use a2a_http::rest::route;
use a2a_http::routes::Routes;
use a2a_http::service::{
    answered, binding_of, jsonrpc_error_response, request_span, rest_error, Binding, Body, HttpResponse, Service,
};
use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::operation::Operation;

/// What one function serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Every route and method (a single-function deployment, or `http-stream`).
    All,
    /// `POST /`: every JSON-RPC method.
    JsonRpc,
    AgentCard,
    /// The HTTP+JSON routes of one operation (with and without a tenant).
    Operation(Operation),
}

/// The endpoint a request is for (`None`: no such route).
pub fn endpoint_of(method: &Method, path: &str) -> Option<Endpoint> {
    if is_public_path(path) {
        return Some(Endpoint::AgentCard);
    }
    if binding_of(path) == Binding::JsonRpc {
        return Some(Endpoint::JsonRpc);
    }
    Some(Endpoint::Operation(route(method, path).ok()?.0.operation()))
}

/// Turns a Lambda HTTP event into the engine's request type.
/// Claims API Gateway's JWT authorizer verified travel on as [`GatewayClaims`] in the request's
/// extensions (never as headers, which a client could forge).
pub fn to_request(event: Request) -> http::Request<Bytes> {
    let claims = gateway_claims(&event);
    let (mut parts, body) = event.into_parts();
    if let Some(claims) = claims {
        parts.extensions.insert(claims);
    }
    let bytes = match body {
        LambdaBody::Empty => Bytes::new(),
        LambdaBody::Text(t) => Bytes::from(t),
        LambdaBody::Binary(b) => Bytes::from(b),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, bytes)
}

/// The claims of the JWT authorizer of an HTTP API (payload format 2.0), if it ran.
fn gateway_claims(event: &Request) -> Option<GatewayClaims> {
    let RequestContext::ApiGatewayV2(ctx) = event.request_context_ref()? else { return None };
    let jwt = ctx.authorizer.as_ref()?.jwt.as_ref()?;
    Some(GatewayClaims { claims: jwt.claims.clone(), scopes: jwt.scopes.clone().unwrap_or_default() })
}

/// Serves one event on a buffered function, in the request's SERVER span.
pub async fn handle(service: &Service, serves: Endpoint, event: Request) -> Response<LambdaBody> {
    let req = to_request(event);
    let span = request_span(req.method(), req.uri().path(), req.headers());
    let resp = match check(serves, &req) {
        Some(refusal) => refusal,
        None => service.handle(req).instrument(span.clone()).await,
    };
    answered(&span, &resp);
    drop(span);
    // Events this call recorded (a new turn, a cancel) reach the edge, and its spans the collector,
    // before the container freezes.
    service.engine.hub.flush().await;
    super::flush_telemetry().await;
    let (parts, body) = resp.into_parts();
    let bytes = match body {
        Body::Full(b) => b,
        // A stream asked of a buffered function: the whole stream, once the turn has ended.
        Body::Sse(stream) => Bytes::from(stream.collect::<Vec<Bytes>>().await.concat()),
    };
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) if text.is_empty() => LambdaBody::Empty,
        Ok(text) => LambdaBody::Text(text),
        Err(e) => LambdaBody::Binary(e.into_bytes()),
    };
    Response::from_parts(parts, body)
}

/// A 404 for requests that were routed to the wrong function.
fn check(serves: Endpoint, req: &http::Request<Bytes>) -> Option<HttpResponse> {
    if serves == Endpoint::All {
        return None;
    }
    let found = endpoint_of(req.method(), req.uri().path());
    if found == Some(serves) {
        return None;
    }
    let err = A2aError::new(
        ErrorKind::MethodNotFound,
        format!("this function serves {serves:?}; {} {} is not one of its routes", req.method(), req.uri().path()),
    );
    Some(match binding_of(req.uri().path()) {
        Binding::JsonRpc => jsonrpc_error_response(&a2a_protocol::rpc_id::RpcId::null(), &err),
        Binding::Rest => rest_error(&err),
    })
}

/// Runs a buffered HTTP function until the runtime stops it: one invocation at a time, or up to
/// `AWS_LAMBDA_MAX_CONCURRENCY` at once where the runtime sets it (Lambda Managed Instances).
pub async fn serve(service: Arc<Service>, serves: Endpoint) -> Result<(), lambda_http::Error> {
    lambda_http::run_concurrent(lambda_http::service_fn(move |event: Request| {
        let service = service.clone();
        async move { Ok::<_, Infallible>(handle(&service, serves, event).await) }
    }))
    .await
}

type Streamed = StreamBody<futures::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// Serves one event with response streaming: SSE frames leave as they are produced.
pub async fn handle_streaming(service: &Service, event: Request) -> Response<Streamed> {
    handle_streaming_with(service, None, event).await
}

/// [`handle_streaming`], with `routes` (the playground, when the function is asked to serve it)
/// taking the paths they own.
pub async fn handle_streaming_with(
    service: &Service,
    routes: Option<&dyn Routes>,
    event: Request,
) -> Response<Streamed> {
    let req = to_request(event);
    let span = request_span(req.method(), req.uri().path(), req.headers());
    let resp = match routes.filter(|r| r.owns(req.uri().path())) {
        Some(routes) => serve_routes(service, routes, req).instrument(span.clone()).await,
        None => service.handle(req).instrument(span.clone()).await,
    };
    answered(&span, &resp);
    drop(span);
    super::flush_telemetry().await;
    let (parts, body) = resp.into_parts();
    let frames = match body {
        Body::Full(b) => futures::stream::iter([Ok(Frame::data(b))]).boxed(),
        Body::Sse(stream) => stream.map(|b| Ok(Frame::data(b))).boxed(),
    };
    Response::from_parts(parts, StreamBody::new(frames))
}

/// A request for `routes`: authenticated by the service unless the path is public, its body within
/// the routes' limit (the embedded server's rule, `a2a_http::server`).
async fn serve_routes(service: &Service, routes: &dyn Routes, req: http::Request<Bytes>) -> HttpResponse {
    let max = routes.max_body();
    if req.body().len() > max {
        return rest_error(&A2aError::new(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds the limit of {max} bytes"),
        ));
    }
    let (parts, body) = req.into_parts();
    match a2a_http::routes::caller(service, routes, &parts).await {
        Ok(caller) => routes.handle(http::Request::from_parts(parts, body), caller).await,
        Err(e) => rest_error(&e),
    }
}

/// Runs the response-streaming function (`http-stream`, behind a Function URL in RESPONSE_STREAM
/// mode) until the runtime stops it; `routes` as in [`handle_streaming_with`]; concurrent as
/// [`serve`] is.
pub async fn serve_streaming(service: Arc<Service>, routes: Option<Arc<dyn Routes>>) -> Result<(), lambda_http::Error> {
    lambda_http::run_with_streaming_response_concurrent(lambda_http::service_fn(move |event: Request| {
        let service = service.clone();
        let routes = routes.clone();
        async move { Ok::<_, Infallible>(handle_streaming_with(&service, routes.as_deref(), event).await) }
    }))
    .await
}
