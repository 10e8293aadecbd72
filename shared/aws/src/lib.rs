//! The AWS adapters: [`DynamoStore`] for tasks, event logs and push configs, [`sqs`] for the work
//! and push queues, [`resources`] to create them, [`KmsSigner`] for signing keys held in KMS,
//! [`sigv4`] for signing calls, and (feature `lambda`) the Lambda glue, configured from the
//! environment (`TABLE_NAME`, `TASK_QUEUE_URL`,
//! `PUSH_QUEUE_URL` and the standard AWS variables: `AWS_ENDPOINT_URL`, `AWS_REGION`, credentials)
//! through aws-config.

mod dynamo;
mod failure;
pub mod kms;
#[cfg(feature = "lambda")]
pub mod lambda;
mod meter;
pub mod resources;
pub mod sigv4;
pub mod sqs;

pub use dynamo::{DynamoStore, MAX_ITEM_BYTES};
pub use kms::KmsSigner;
pub use meter::{Meter, Usage};

/// Where the AWS resources are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsSettings {
    pub table_name: String,
    pub task_queue_url: Option<String>,
    pub push_queue_url: Option<String>,
    /// Items expire this many seconds after they are written (DynamoDB TTL); `None`: kept.
    pub ttl_seconds: Option<u64>,
    /// Secret that seals ListTasks page tokens (HMAC); random per process when unset.
    pub page_token_secret: Option<String>,
    /// Delivery attempts of a push notification before SQS moves it to the dead-letter queue.
    pub push_max_attempts: u32,
}

impl AwsSettings {
    /// Reads `TABLE_NAME` (default `a2a-tasks`), `TASK_QUEUE_URL`, `PUSH_QUEUE_URL`,
    /// `TASK_TTL_SECONDS`, `PAGE_TOKEN_SECRET` and `PUSH_MAX_ATTEMPTS` (default 6).
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self {
            table_name: var("TABLE_NAME").unwrap_or_else(|| "a2a-tasks".into()),
            task_queue_url: var("TASK_QUEUE_URL"),
            push_queue_url: var("PUSH_QUEUE_URL"),
            ttl_seconds: var("TASK_TTL_SECONDS").and_then(|v| v.parse().ok()),
            page_token_secret: var("PAGE_TOKEN_SECRET"),
            push_max_attempts: var("PUSH_MAX_ATTEMPTS").and_then(|v| v.parse().ok()).unwrap_or(6),
        }
    }
}

/// The shared SDK configuration (region, credentials, `AWS_ENDPOINT_URL`) from the environment.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await
}
