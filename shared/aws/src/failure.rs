//! What a failed DynamoDB or SQS call means to the caller: one mapping for both services.
//!
//! The SDK has already retried (standard mode: three attempts with backoff) by the time a call
//! fails here. What still fails for a passing reason (throttled, a 5xx, a timeout, a connection
//! that dropped) is answered as ResourceExhausted (JSON-RPC -32011, HTTP 503, gRPC
//! RESOURCE_EXHAUSTED): the client retries later. Anything else is an internal error. Either way
//! the message names the service and the operation, never the request.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use a2a_protocol::error::{A2aError, ErrorKind};

/// Error codes AWS services answer when a call may succeed later (the SDK's own list of throttling
/// and transient errors, plus SQS's).
const TRANSIENT_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
];

/// Whether the failure may pass: worth the client's retry.
fn transient<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> bool {
    match e {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(s) => {
            s.raw().status().is_server_error() || s.err().code().is_some_and(|c| TRANSIENT_CODES.contains(&c))
        }
        _ => false,
    }
}

/// The protocol error for a failed call `what` of `service` ("storage": DynamoDB, "queue": SQS),
/// logged with the SDK's error.
pub(crate) fn call_failed<E>(service: &str, what: &str, e: SdkError<E, HttpResponse>) -> A2aError
where
    E: ProvideErrorMetadata + std::fmt::Debug,
{
    let transient = transient(&e);
    tracing::error!(service, operation = what, transient, error = ?e, "AWS request failed");
    if transient {
        A2aError::new(
            ErrorKind::ResourceExhausted,
            format!("{service} unavailable ({what}): throttled or failing after retries; retry later"),
        )
    } else {
        A2aError::internal(format!("{service} unavailable ({what})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    fn service_error(err: GetItemError, status: u16) -> SdkError<GetItemError, HttpResponse> {
        let raw = HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty());
        SdkError::service_error(err, raw)
    }

    #[test]
    fn throttling_and_5xx_are_retryable_the_rest_internal() {
        let throttled = GetItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("slow down")
                .meta(ErrorMetadata::builder().code("ProvisionedThroughputExceededException").build())
                .build(),
        );
        let e = call_failed("storage", "GetItem", service_error(throttled, 400));
        assert_eq!(e.kind, ErrorKind::ResourceExhausted);
        assert!(e.message.contains("storage unavailable (GetItem)"), "{}", e.message);

        let failing = GetItemError::unhandled("boom");
        assert_eq!(call_failed("storage", "GetItem", service_error(failing, 503)).kind, ErrorKind::ResourceExhausted);

        let refused = GetItemError::unhandled("bad request");
        assert_eq!(call_failed("storage", "GetItem", service_error(refused, 400)).kind, ErrorKind::Internal);

        let timeout: SdkError<GetItemError, HttpResponse> = SdkError::timeout_error("slow");
        assert_eq!(call_failed("queue", "ReceiveMessage", timeout).kind, ErrorKind::ResourceExhausted);
    }
}
