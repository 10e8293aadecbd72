//! One operation on the wire: a JSON-RPC 2.0 call (`POST` to the interface URL, the 1.0 method
//! name) or an HTTP+JSON request (the route of the operation, its fields in the path, the query or
//! the body), with `A2A-Version: 1.0` and the credentials (a gRPC interface: see `grpc`); answers and
//! errors read back into the project's types and [`a2a_protocol::error::A2aError`].

use std::sync::atomic::{AtomicU64, Ordering};

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{Binding, Client, ClientError, ClientResult};
use a2a_protocol::error::A2aError;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Client {
    /// Calls `method` (a 1.0 method name) with `params` and reads its result.
    pub(crate) async fn call<P: Serialize, R: DeserializeOwned>(&self, method: &str, params: P) -> ClientResult<R> {
        let params = serde_json::to_value(params).map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let result = match self.binding {
            Binding::Grpc => self.grpc_call(method, &params).await?,
            _ => self.http_call(method, &params).await?,
        };
        serde_json::from_value(result)
            .map_err(|e| ClientError::InvalidResponse(format!("{method}: the result is not what 1.0 says: {e}")))
    }

    /// The result of `method` over JSON-RPC or HTTP+JSON, as 1.0 JSON.
    async fn http_call(&self, method: &str, params: &Value) -> ClientResult<Value> {
        let resp = self.send(method, params, None).await?;
        let status = resp.status().as_u16();
        let body = super::body::read(resp, self.options.max_answer_bytes, self.options.timeout).await?;
        let value: Value = if body.is_empty() { Value::Null } else { read_json(status, &body)? };
        Ok(match self.binding {
            Binding::JsonRpc | Binding::JsonRpc03 => match (value.get("error"), value.get("result")) {
                (Some(error), _) => return Err(ClientError::Protocol(A2aError::from_jsonrpc(error))),
                (None, Some(result)) if status == 200 && self.binding == Binding::JsonRpc03 => {
                    super::v03::result(method, result.clone())?
                }
                (None, Some(result)) if status == 200 => result.clone(),
                _ => return Err(unexpected(status, &body)),
            },
            Binding::HttpJson if (200..300).contains(&status) => value,
            Binding::HttpJson if value.get("error").is_some() => {
                return Err(ClientError::Protocol(A2aError::from_rest(status, &value)))
            }
            Binding::HttpJson | Binding::Grpc => return Err(unexpected(status, &body)),
        })
    }

    /// Sends `method` and returns the answer as it starts (its body unread): what a stream reads.
    /// A refused client-credentials token is fetched again once.
    pub(crate) async fn send(
        &self,
        method: &str,
        params: &Value,
        last_event_id: Option<u64>,
    ) -> ClientResult<reqwest::Response> {
        let mut retried = false;
        loop {
            let mut req = self.request(method, params)?;
            if let Some(id) = last_event_id {
                req = req.header("Last-Event-ID", id.to_string());
            }
            let mut request = self.credentials.apply(req).await?.build()?;
            if let Some(trace) = self.options.trace_context() {
                trace.write_headers(request.headers_mut());
            }
            self.credentials.sign(&mut request).await?;
            let resp = tokio::time::timeout(self.options.timeout, self.http.execute(request))
                .await
                .map_err(|_| ClientError::Timeout)??;
            if resp.status() == 401
                && !retried
                && matches!(self.options.credentials, super::Credentials::ClientCredentials { .. })
            {
                self.credentials.refused().await;
                retried = true;
                continue;
            }
            return Ok(resp);
        }
    }

    fn request(&self, method: &str, params: &Value) -> ClientResult<reqwest::RequestBuilder> {
        let streaming = matches!(method, "SendStreamingMessage" | "SubscribeToTask");
        let req = match self.binding {
            Binding::Grpc => return Err(ClientError::Transport("a gRPC interface takes no HTTP requests".into())),
            Binding::JsonRpc03 => {
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                let (method, params) = super::v03::request(method, params)?;
                let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                // A 0.3 agent knows no A2A-Version header.
                let accept = if streaming { "text/event-stream" } else { "application/json" };
                return Ok(json_body(self.http.post(&self.url), &body).header("Accept", accept));
            }
            Binding::JsonRpc => {
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                let mut params = params.clone();
                if !self.tenant.is_empty() {
                    params["tenant"] = json!(self.tenant);
                }
                json_body(
                    self.http.post(&self.url),
                    &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                )
            }
            Binding::HttpJson => {
                let route = rest_route(method, params)?;
                let prefix = if self.tenant.is_empty() { String::new() } else { format!("/{}", segment(&self.tenant)) };
                let mut req = self.http.request(route.method, format!("{}{prefix}{}", self.url, route.path));
                if !route.query.is_empty() {
                    req = req.query(&route.query);
                }
                if let Some(body) = route.body {
                    req = json_body(req, &body);
                }
                req
            }
        };
        let accept = if streaming { "text/event-stream" } else { "application/json" };
        Ok(req.header("A2A-Version", "1.0").header("Accept", accept))
    }
}

fn json_body(req: reqwest::RequestBuilder, body: &Value) -> reqwest::RequestBuilder {
    req.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_string())
}

fn read_json(status: u16, body: &[u8]) -> ClientResult<Value> {
    serde_json::from_slice(body).map_err(|_| unexpected(status, body))
}

/// An answer that is neither a result nor a protocol error.
pub(crate) fn unexpected(status: u16, body: &[u8]) -> ClientError {
    let body = String::from_utf8_lossy(body).into_owned();
    if (200..300).contains(&status) {
        ClientError::InvalidResponse(format!("not a protocol answer: {}", body.chars().take(200).collect::<String>()))
    } else {
        ClientError::Http { status, body }
    }
}

/// A path segment, percent-encoded.
fn segment(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

struct Route {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    body: Option<Value>,
}

/// The HTTP+JSON route of `method` (spec §11.3): fields named in the path leave the rest; the rest
/// is the body (POST) or the query (GET, DELETE).
fn rest_route(method: &str, params: &Value) -> ClientResult<Route> {
    let mut fields: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    fields.remove("tenant");
    let mut take = |name: &str| -> ClientResult<String> {
        match fields.remove(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(segment(&s)),
            _ => Err(ClientError::InvalidResponse(format!("{method}: {name} is required"))),
        }
    };
    let (http_method, path) = match method {
        "SendMessage" => (Method::POST, "/message:send".to_string()),
        "SendStreamingMessage" => (Method::POST, "/message:stream".to_string()),
        "GetTask" => (Method::GET, format!("/tasks/{}", take("id")?)),
        "ListTasks" => (Method::GET, "/tasks".to_string()),
        "CancelTask" => (Method::POST, format!("/tasks/{}:cancel", take("id")?)),
        "SubscribeToTask" => (Method::GET, format!("/tasks/{}:subscribe", take("id")?)),
        "CreateTaskPushNotificationConfig" => {
            let task = fields.get("taskId").and_then(Value::as_str).map(segment).unwrap_or_default();
            (Method::POST, format!("/tasks/{task}/pushNotificationConfigs"))
        }
        "GetTaskPushNotificationConfig" => {
            let task = take("taskId")?;
            (Method::GET, format!("/tasks/{task}/pushNotificationConfigs/{}", take("id")?))
        }
        "ListTaskPushNotificationConfigs" => {
            (Method::GET, format!("/tasks/{}/pushNotificationConfigs", take("taskId")?))
        }
        "DeleteTaskPushNotificationConfig" => {
            let task = take("taskId")?;
            (Method::DELETE, format!("/tasks/{task}/pushNotificationConfigs/{}", take("id")?))
        }
        "GetExtendedAgentCard" => (Method::GET, "/extendedAgentCard".to_string()),
        other => return Err(ClientError::InvalidResponse(format!("unknown operation {other}"))),
    };
    if http_method == Method::POST {
        return Ok(Route { method: http_method, path, query: Vec::new(), body: Some(Value::Object(fields)) });
    }
    let query = fields
        .into_iter()
        .filter_map(|(k, v)| match v {
            Value::String(s) if s.is_empty() || s == "TASK_STATE_UNSPECIFIED" => None,
            Value::String(s) => Some((k, s)),
            Value::Number(n) => Some((k, n.to_string())),
            Value::Bool(b) => Some((k, b.to_string())),
            _ => None,
        })
        .collect();
    Ok(Route { method: http_method, path, query, body: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_put_fields_in_the_path_the_query_or_the_body() {
        let r = rest_route("GetTask", &json!({"tenant": "", "id": "a b", "historyLength": 2})).unwrap();
        assert_eq!((r.method, r.path.as_str()), (Method::GET, "/tasks/a%20b"));
        assert_eq!(r.query, [("historyLength".to_string(), "2".to_string())]);
        let r = rest_route("ListTasks", &json!({"contextId": "c", "status": "TASK_STATE_UNSPECIFIED", "pageSize": 5}))
            .unwrap();
        assert_eq!(r.query, [("contextId".to_string(), "c".to_string()), ("pageSize".to_string(), "5".to_string())]);
        let r = rest_route("CancelTask", &json!({"id": "t1", "metadata": {"k": 1}})).unwrap();
        assert_eq!((r.path.as_str(), r.body), ("/tasks/t1:cancel", Some(json!({"metadata": {"k": 1}}))));
        let r = rest_route("DeleteTaskPushNotificationConfig", &json!({"taskId": "t", "id": "c"})).unwrap();
        assert_eq!((r.method, r.path.as_str()), (Method::DELETE, "/tasks/t/pushNotificationConfigs/c"));
        assert!(rest_route("GetTask", &json!({})).is_err());
    }
}
