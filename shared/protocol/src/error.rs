//! One error type for every binding, and the single place that maps it to a JSON-RPC code, an HTTP
//! status, a gRPC status name and the `google.rpc.ErrorInfo` reason (spec §3.3.2, §5.4, §9.6, §11.6).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};

/// Every error kind the protocol defines, plus the two HTTP-level refusals a server needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    // JSON-RPC 2.0 standard errors.
    Parse,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    // A2A errors (spec §5.4).
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    // Transport-level refusals (not in §5.4; codes chosen in the -32000..-32099 server range).
    Unauthenticated,
    /// Authenticated, but not allowed this operation (an OAuth scope it lacks).
    PermissionDenied,
    PayloadTooLarge,
    /// HTTP+JSON: the path exists but not for this HTTP method.
    MethodNotAllowed,
    /// The request (its body) did not arrive in time.
    RequestTimeout,
    /// The server holds all it may (its memory budget); retry later.
    ResourceExhausted,
}

/// How one error kind appears on each binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorSpec {
    pub jsonrpc_code: i32,
    pub http_status: u16,
    pub grpc_status: &'static str,
    /// `ErrorInfo.reason`: the error type in UPPER_SNAKE_CASE without the `Error` suffix.
    pub reason: &'static str,
    /// The default human-readable message.
    pub message: &'static str,
}

pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

impl ErrorKind {
    pub const ALL: &'static [ErrorKind] = &[
        Self::Parse,
        Self::InvalidRequest,
        Self::MethodNotFound,
        Self::InvalidParams,
        Self::Internal,
        Self::TaskNotFound,
        Self::TaskNotCancelable,
        Self::PushNotificationNotSupported,
        Self::UnsupportedOperation,
        Self::ContentTypeNotSupported,
        Self::InvalidAgentResponse,
        Self::ExtendedAgentCardNotConfigured,
        Self::ExtensionSupportRequired,
        Self::VersionNotSupported,
        Self::Unauthenticated,
        Self::PermissionDenied,
        Self::PayloadTooLarge,
        Self::MethodNotAllowed,
        Self::RequestTimeout,
        Self::ResourceExhausted,
    ];

    /// The mapping table. Everything that turns an error into bytes reads it from here.
    pub const fn spec(self) -> ErrorSpec {
        const fn s(
            jsonrpc_code: i32,
            http_status: u16,
            grpc_status: &'static str,
            reason: &'static str,
            message: &'static str,
        ) -> ErrorSpec {
            ErrorSpec { jsonrpc_code, http_status, grpc_status, reason, message }
        }
        match self {
            Self::Parse => s(-32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR", "Invalid JSON payload"),
            Self::InvalidRequest => {
                s(-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Request payload validation error")
            }
            Self::MethodNotFound => s(-32601, 404, "UNIMPLEMENTED", "METHOD_NOT_FOUND", "Method not found"),
            Self::InvalidParams => s(-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "Invalid parameters"),
            Self::Internal => s(-32603, 500, "INTERNAL", "INTERNAL", "Internal error"),
            Self::TaskNotFound => s(-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found"),
            Self::TaskNotCancelable => {
                s(-32002, 409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "Task cannot be canceled")
            }
            Self::PushNotificationNotSupported => {
                s(-32003, 400, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push Notification is not supported")
            }
            Self::UnsupportedOperation => {
                s(-32004, 400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", "This operation is not supported")
            }
            Self::ContentTypeNotSupported => {
                s(-32005, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types")
            }
            Self::InvalidAgentResponse => {
                s(-32006, 502, "INTERNAL", "INVALID_AGENT_RESPONSE", "Invalid agent response")
            }
            Self::ExtendedAgentCardNotConfigured => s(
                -32007,
                400,
                "FAILED_PRECONDITION",
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
            ),
            Self::ExtensionSupportRequired => {
                s(-32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED", "Extension support required")
            }
            Self::VersionNotSupported => {
                s(-32009, 400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED", "Version not supported")
            }
            Self::Unauthenticated => s(-32010, 401, "UNAUTHENTICATED", "UNAUTHENTICATED", "Authentication required"),
            Self::PermissionDenied => s(-32012, 403, "PERMISSION_DENIED", "PERMISSION_DENIED", "Permission denied"),
            Self::PayloadTooLarge => {
                s(-32600, 413, "RESOURCE_EXHAUSTED", "PAYLOAD_TOO_LARGE", "Request body too large")
            }
            Self::MethodNotAllowed => s(-32601, 405, "UNIMPLEMENTED", "METHOD_NOT_ALLOWED", "HTTP method not allowed"),
            Self::RequestTimeout => {
                s(-32600, 408, "DEADLINE_EXCEEDED", "REQUEST_TIMEOUT", "Request not received in time")
            }
            Self::ResourceExhausted => {
                s(-32011, 503, "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", "The server is at its limits")
            }
        }
    }
}

/// An error with its kind, a message for humans and `ErrorInfo.metadata` for machines.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aError {
    pub kind: ErrorKind,
    pub message: String,
    pub metadata: BTreeMap<String, String>,
    /// The `WWW-Authenticate` challenges a 401 or 403 carries (RFC 9110 §11.6.1, RFC 6750 §3); not
    /// part of the body.
    pub challenges: Vec<String>,
}

pub type Result<T, E = A2aError> = std::result::Result<T, E>;

impl A2aError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), metadata: BTreeMap::new(), challenges: Vec::new() }
    }

    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata.insert(key.to_string(), value.into());
        self
    }

    /// The same error with its field named under `parent` (`url` → `parent.url`).
    pub fn under(mut self, parent: &str) -> Self {
        if let Some(field) = self.metadata.get("field").cloned() {
            let full = format!("{parent}.{field}");
            if let Some(rest) = self.message.strip_prefix(&format!("{field}:")) {
                self.message = format!("{full}:{rest}");
            }
            self.metadata.insert("field".into(), full);
        }
        self
    }

    pub fn parse(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Parse, msg)
    }

    pub fn invalid_request(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, msg)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorKind::MethodNotFound, format!("Method not found: {method}")).with("method", method)
    }

    /// Invalid parameters, naming the field (as a path such as `message.parts[0].text`).
    pub fn invalid_field(field: &str, problem: impl fmt::Display) -> Self {
        Self::new(ErrorKind::InvalidParams, format!("{field}: {problem}")).with("field", field)
    }

    pub fn invalid_params(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, msg)
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, msg)
    }

    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(ErrorKind::TaskNotFound, format!("Task not found: {task_id}")).with("taskId", task_id)
    }

    pub fn not_cancelable(task_id: &str, state: impl fmt::Display) -> Self {
        Self::new(ErrorKind::TaskNotCancelable, format!("Task {task_id} cannot be canceled in state {state}"))
            .with("taskId", task_id)
    }

    pub fn unsupported(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::UnsupportedOperation, msg)
    }

    pub fn push_not_supported() -> Self {
        Self::new(ErrorKind::PushNotificationNotSupported, ErrorKind::PushNotificationNotSupported.spec().message)
    }

    pub fn version_not_supported(version: &str) -> Self {
        Self::new(
            ErrorKind::VersionNotSupported,
            format!("A2A version {version:?} is not supported; supported: 0.3, 1.0"),
        )
        .with("version", version)
    }

    pub fn unauthenticated(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthenticated, msg)
    }

    /// A refusal for lack of a scope, naming it (`metadata.scope`).
    pub fn insufficient_scope(scope: &str) -> Self {
        Self::new(ErrorKind::PermissionDenied, format!("insufficient scope: this operation needs the {scope:?} scope"))
            .with("scope", scope)
    }

    /// The same error with the `WWW-Authenticate` challenges to send with it.
    pub fn challenged(mut self, challenges: Vec<String>) -> Self {
        self.challenges = challenges;
        self
    }

    pub fn spec(&self) -> ErrorSpec {
        self.kind.spec()
    }

    /// The `google.rpc.ErrorInfo` detail, in ProtoJSON (`google.protobuf.Any` with `@type`).
    pub fn error_info(&self) -> Value {
        let mut info = json!({
            "@type": ERROR_INFO_TYPE,
            "reason": self.spec().reason,
            "domain": ERROR_DOMAIN,
        });
        if !self.metadata.is_empty() {
            info["metadata"] = json!(self.metadata);
        }
        info
    }

    /// The JSON-RPC `error` object (spec §9.6): code, message, and `data` = `[ErrorInfo]`.
    pub fn to_jsonrpc(&self) -> Value {
        json!({ "code": self.spec().jsonrpc_code, "message": self.message, "data": [self.error_info()] })
    }

    /// The AIP-193 body of the HTTP+JSON binding (spec §11.6).
    pub fn to_rest(&self) -> Value {
        let spec = self.spec();
        json!({ "error": {
            "code": spec.http_status,
            "status": spec.grpc_status,
            "message": self.message,
            "details": [self.error_info()],
        }})
    }
}

/// Reading errors back (a client's side of the one mapping): the kind by the `ErrorInfo` reason
/// when the error carries one, else by the JSON-RPC code or the HTTP status.
impl A2aError {
    /// A JSON-RPC `error` object.
    pub fn from_jsonrpc(error: &Value) -> Self {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let info = error.get("data").and_then(error_info_of);
        let kind = info
            .and_then(kind_by_reason)
            .or_else(|| ErrorKind::ALL.iter().copied().find(|k| i64::from(k.spec().jsonrpc_code) == code))
            .unwrap_or(ErrorKind::Internal);
        Self::read_back(kind, error.get("message"), info).with("code", code.to_string())
    }

    /// An AIP-193 body (`{"error": {...}}`) with its HTTP status.
    pub fn from_rest(status: u16, body: &Value) -> Self {
        let error = body.get("error").unwrap_or(body);
        let info = error.get("details").and_then(error_info_of);
        let kind = info
            .and_then(kind_by_reason)
            .or_else(|| ErrorKind::ALL.iter().copied().find(|k| k.spec().http_status == status))
            .unwrap_or(ErrorKind::Internal);
        Self::read_back(kind, error.get("message"), info)
    }

    /// A gRPC status: its code's name (`NOT_FOUND`), its message and its `ErrorInfo` as JSON.
    pub fn from_grpc(code: &str, message: &str, info: Option<&Value>) -> Self {
        let kind = info
            .and_then(kind_by_reason)
            .or_else(|| ErrorKind::ALL.iter().copied().find(|k| k.spec().grpc_status == code))
            .unwrap_or(ErrorKind::Internal);
        Self::read_back(kind, Some(&Value::from(message)).filter(|_| !message.is_empty()), info)
    }

    fn read_back(kind: ErrorKind, message: Option<&Value>, info: Option<&Value>) -> Self {
        let message = message.and_then(Value::as_str).unwrap_or(kind.spec().message);
        let mut err = Self::new(kind, message);
        if let Some(meta) = info.and_then(|i| i.get("metadata")).and_then(Value::as_object) {
            for (k, v) in meta {
                err.metadata.insert(k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
        }
        err
    }
}

/// The `google.rpc.ErrorInfo` among error details (a list, or one object).
fn error_info_of(details: &Value) -> Option<&Value> {
    let is_info =
        |d: &&Value| d.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE) || d.get("reason").is_some();
    match details {
        Value::Array(items) => items.iter().find(is_info),
        one => Some(one).filter(is_info),
    }
}

fn kind_by_reason(info: &Value) -> Option<ErrorKind> {
    let reason = info.get("reason")?.as_str()?;
    ErrorKind::ALL.iter().copied().find(|k| k.spec().reason == reason)
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.spec().reason, self.spec().jsonrpc_code, self.message)
    }
}

impl std::error::Error for A2aError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of spec §5.4, row by row.
    #[test]
    fn a2a_errors_map_as_the_spec_table() {
        let table = [
            (ErrorKind::TaskNotFound, -32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"),
            (ErrorKind::TaskNotCancelable, -32002, "FAILED_PRECONDITION", 409, "TASK_NOT_CANCELABLE"),
            (ErrorKind::PushNotificationNotSupported, -32003, "UNIMPLEMENTED", 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
            (ErrorKind::UnsupportedOperation, -32004, "UNIMPLEMENTED", 400, "UNSUPPORTED_OPERATION"),
            (ErrorKind::ContentTypeNotSupported, -32005, "INVALID_ARGUMENT", 415, "CONTENT_TYPE_NOT_SUPPORTED"),
            (ErrorKind::InvalidAgentResponse, -32006, "INTERNAL", 502, "INVALID_AGENT_RESPONSE"),
            (
                ErrorKind::ExtendedAgentCardNotConfigured,
                -32007,
                "FAILED_PRECONDITION",
                400,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ),
            (ErrorKind::ExtensionSupportRequired, -32008, "FAILED_PRECONDITION", 400, "EXTENSION_SUPPORT_REQUIRED"),
            (ErrorKind::VersionNotSupported, -32009, "UNIMPLEMENTED", 400, "VERSION_NOT_SUPPORTED"),
            (ErrorKind::Parse, -32700, "INVALID_ARGUMENT", 400, "PARSE_ERROR"),
            (ErrorKind::InvalidRequest, -32600, "INVALID_ARGUMENT", 400, "INVALID_REQUEST"),
            (ErrorKind::MethodNotFound, -32601, "UNIMPLEMENTED", 404, "METHOD_NOT_FOUND"),
            (ErrorKind::InvalidParams, -32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
            (ErrorKind::Internal, -32603, "INTERNAL", 500, "INTERNAL"),
        ];
        for (kind, code, grpc, http, reason) in table {
            let spec = kind.spec();
            assert_eq!(
                (spec.jsonrpc_code, spec.grpc_status, spec.http_status, spec.reason),
                (code, grpc, http, reason),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn jsonrpc_and_rest_shapes_match_the_spec_examples() {
        let e = A2aError::task_not_found("nonexistent-task-id");
        assert_eq!(
            e.to_jsonrpc(),
            json!({"code": -32001, "message": "Task not found: nonexistent-task-id", "data": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org", "metadata": {"taskId": "nonexistent-task-id"}}]})
        );
        let rest = e.to_rest();
        assert_eq!(rest["error"]["code"], 404);
        assert_eq!(rest["error"]["status"], "NOT_FOUND");
        assert_eq!(rest["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(rest["error"]["details"][0]["domain"], "a2a-protocol.org");
    }
}
