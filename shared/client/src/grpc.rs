//! The gRPC transport (feature `client-grpc`, spec §10): one operation as a call of
//! `lf.a2a.v1.A2AService` over HTTP/2 (tonic), plaintext or TLS (the web PKI's roots). The request
//! is the 1.0 JSON the other bindings send, written as message bytes through the vendored proto's
//! descriptors; `a2a-version` and the credentials travel as metadata; a failed call's status is read
//! back into [`A2aError`](a2a_protocol::error::A2aError) by its `ErrorInfo` reason. Streams are
//! server-streaming calls whose messages are numbered from the `a2a-first-event-id` metadata, so a
//! dropped one resumes with SubscribeToTask and `last-event-id`, as SSE does with `Last-Event-ID`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::uri::PathAndQuery;
use serde_json::{json, Value};
use tokio::sync::OnceCell;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::{Client, ClientError, ClientResult, Credentials};
use a2a_grpc::codec::Raw;
use a2a_grpc::{error_of, wire, FIRST_EVENT_ID, SERVICE_NAME};
use a2a_protocol::types::StreamResponse;

/// The interface's channel, opened on first use and shared by the client's clones.
#[derive(Clone, Default)]
pub(crate) struct Connection(Arc<OnceCell<Channel>>);

/// A streaming answer's messages, numbered from its `a2a-first-event-id`.
pub(crate) struct Messages {
    stream: tonic::Streaming<Bytes>,
    next_seq: Option<u64>,
}

impl Client {
    /// Calls `method` with `params` (the 1.0 JSON of its request) and reads the answer as 1.0 JSON.
    pub(crate) async fn grpc_call(&self, method: &str, params: &Value) -> ClientResult<Value> {
        let mut retried = false;
        loop {
            let (mut grpc, path, mut req) = self.prepare(method, params, None).await?;
            req.set_timeout(self.options.timeout);
            let answer = tokio::time::timeout(self.options.timeout, grpc.unary(req, path, Raw)).await;
            match answer.map_err(|_| ClientError::Timeout)? {
                Ok(resp) => {
                    let output = describe(method)?.output();
                    let json = wire::read(&output, resp.into_inner()).map_err(|s| invalid(method, &s))?;
                    return serde_json::from_str(&json).map_err(|e| ClientError::InvalidResponse(e.to_string()));
                }
                Err(status) if self.again(&status, &mut retried).await => continue,
                Err(status) => return Err(failure(status)),
            }
        }
    }

    /// Opens the server stream of `method` (after event `last_event_id` when resuming).
    pub(crate) async fn grpc_stream(
        &self,
        method: &str,
        params: &Value,
        last_event_id: Option<u64>,
    ) -> ClientResult<Messages> {
        let mut retried = false;
        loop {
            let (mut grpc, path, req) = self.prepare(method, params, last_event_id).await?;
            // The agent answers the headers with the first event: the wait for an event applies.
            let answer = tokio::time::timeout(self.options.timeout, grpc.server_streaming(req, path, Raw)).await;
            match answer.map_err(|_| ClientError::Timeout)? {
                Ok(resp) => {
                    let first = resp.metadata().get(FIRST_EVENT_ID).and_then(|v| v.to_str().ok()?.parse().ok());
                    return Ok(Messages { stream: resp.into_inner(), next_seq: first });
                }
                Err(status) if self.again(&status, &mut retried).await => continue,
                Err(status) => return Err(failure(status)),
            }
        }
    }

    /// The call's client, path and request: the message with the tenant, `a2a-version`, the
    /// credentials and `last-event-id` as metadata.
    async fn prepare(
        &self,
        method: &str,
        params: &Value,
        last_event_id: Option<u64>,
    ) -> ClientResult<(tonic::client::Grpc<Channel>, PathAndQuery, tonic::Request<Bytes>)> {
        if let Credentials::SigV4 { .. } = self.options.credentials {
            return Err(ClientError::Credentials("SigV4 signs HTTP requests: use JSONRPC or HTTP+JSON".into()));
        }
        let mut params = params.clone();
        if !self.tenant.is_empty() {
            params["tenant"] = json!(self.tenant);
        }
        let input = describe(method)?.input();
        let bytes = wire::write(&input, &params).map_err(|s| invalid(method, &s))?;
        let mut req = tonic::Request::new(bytes);
        let metadata = req.metadata_mut();
        metadata.insert("a2a-version", MetadataValue::from_static("1.0"));
        if let Some(id) = last_event_id {
            metadata.insert("last-event-id", id.into());
        }
        if let Some(trace) = self.options.trace_context() {
            let mut headers = http::HeaderMap::new();
            trace.write_headers(&mut headers);
            for (name, value) in &headers {
                if let Ok(value) = MetadataValue::try_from(value.as_bytes()) {
                    metadata.insert(
                        MetadataKey::from_bytes(name.as_str().as_bytes())
                            .map_err(|e| ClientError::Transport(e.to_string()))?,
                        value,
                    );
                }
            }
        }
        for (name, value) in self.credentials.headers().await? {
            let key = MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes())
                .map_err(|e| ClientError::Credentials(format!("{name}: {e}")))?;
            let value = MetadataValue::try_from(value.as_str())
                .map_err(|e| ClientError::Credentials(format!("the value of {name}: {e}")))?;
            metadata.insert(key, value);
        }
        let path = PathAndQuery::from_str(&format!("/{SERVICE_NAME}/{method}"))
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let mut grpc = tonic::client::Grpc::new(self.channel().await?)
            .max_decoding_message_size(self.options.max_answer_bytes)
            .max_encoding_message_size(usize::MAX);
        grpc.ready().await.map_err(|e| ClientError::Transport(super::root_cause(&e)))?;
        Ok((grpc, path, req))
    }

    async fn channel(&self) -> ClientResult<Channel> {
        let channel =
            self.grpc.0.get_or_try_init(|| async { Ok::<_, ClientError>(endpoint(&self.url)?.connect_lazy()) });
        channel.await.cloned()
    }

    /// Whether to call again: a refused client-credentials token is fetched again once.
    async fn again(&self, status: &Status, retried: &mut bool) -> bool {
        let renewable = matches!(self.options.credentials, Credentials::ClientCredentials { .. });
        if status.code() != Code::Unauthenticated || *retried || !renewable {
            return false;
        }
        self.credentials.refused().await;
        *retried = true;
        true
    }
}

impl Messages {
    /// The next event and its number; `None` when the stream ended, broke or went silent for
    /// `timeout` (the caller resumes or stops).
    pub(crate) async fn next(&mut self, timeout: Duration) -> ClientResult<Option<(Option<u64>, StreamResponse)>> {
        let bytes = match tokio::time::timeout(timeout, self.stream.message()).await {
            Ok(Ok(Some(bytes))) => bytes,
            Ok(Ok(None)) | Err(_) => return Ok(None),
            Ok(Err(status)) => match failure(status) {
                e @ ClientError::Protocol(_) => return Err(e),
                _ => return Ok(None),
            },
        };
        let seq = self.next_seq;
        self.next_seq = seq.map(|s| s + 1);
        let json = wire::decode("lf.a2a.v1.StreamResponse", bytes).map_err(|s| invalid("a stream event", &s))?;
        let event = serde_json::from_value(json)
            .map_err(|e| ClientError::InvalidResponse(format!("a stream event is not a StreamResponse: {e}")))?;
        Ok(Some((seq, event)))
    }
}

/// The interface URL as an endpoint: `host:port` (the card's form), `http://` and `grpc://` are
/// plaintext; `https://` and `grpcs://` are TLS.
fn endpoint(url: &str) -> ClientResult<Endpoint> {
    let (tls, authority) = match url.split_once("://") {
        None => (false, url),
        Some(("http" | "grpc", rest)) => (false, rest),
        Some(("https" | "grpcs", rest)) => (true, rest),
        Some((scheme, _)) => return Err(ClientError::Card(format!("gRPC interface {url}: unknown scheme {scheme}"))),
    };
    let uri = format!("{}://{}", if tls { "https" } else { "http" }, authority.trim_end_matches('/'));
    let endpoint = Endpoint::from_shared(uri)
        .map_err(|e| ClientError::Card(format!("gRPC interface {url}: {e}")))?
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true);
    if !tls {
        return Ok(endpoint);
    }
    endpoint
        .tls_config(ClientTlsConfig::new().with_webpki_roots())
        .map_err(|e| ClientError::Card(format!("gRPC interface {url}: TLS: {e}")))
}

fn describe(method: &str) -> ClientResult<prost_reflect::MethodDescriptor> {
    wire::method(method).ok_or_else(|| ClientError::InvalidResponse(format!("{SERVICE_NAME} has no method {method}")))
}

fn invalid(what: &str, status: &Status) -> ClientError {
    ClientError::InvalidResponse(format!("{what}: {}", status.message()))
}

/// A failed call: the protocol error when the agent answered one, else what broke on the way.
fn failure(status: Status) -> ClientError {
    if status.get_details_error_info().is_some() {
        return ClientError::Protocol(error_of(&status));
    }
    match status.code() {
        Code::Unavailable | Code::Cancelled | Code::Unknown => ClientError::Transport(status.message().to_string()),
        Code::DeadlineExceeded => ClientError::Timeout,
        _ => ClientError::Protocol(error_of(&status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_urls_become_endpoints() {
        for (url, uri) in [
            ("127.0.0.1:50051", "http://127.0.0.1:50051/"),
            ("grpc://agent.example:443/", "http://agent.example:443/"),
            ("grpcs://agent.example", "https://agent.example/"),
            ("https://agent.example:8443", "https://agent.example:8443/"),
        ] {
            assert_eq!(endpoint(url).unwrap().uri().to_string(), uri, "{url}");
        }
        assert!(matches!(endpoint("ftp://x:1"), Err(ClientError::Card(why)) if why.contains("unknown scheme ftp")));
    }

    #[test]
    fn statuses_without_a_protocol_error_are_transport_failures() {
        assert_eq!(failure(Status::unavailable("refused")), ClientError::Transport("refused".into()));
        assert_eq!(failure(Status::deadline_exceeded("late")), ClientError::Timeout);
        let ClientError::Protocol(e) = failure(a2a_grpc::status(a2a_protocol::error::A2aError::task_not_found("t1")))
        else {
            panic!("a protocol error")
        };
        assert_eq!(e.kind, a2a_protocol::error::ErrorKind::TaskNotFound);
        let ClientError::Protocol(e) = failure(Status::not_found("gone")) else { panic!("by its code") };
        assert_eq!((e.kind, e.message.as_str()), (a2a_protocol::error::ErrorKind::TaskNotFound, "gone"));
    }
}
