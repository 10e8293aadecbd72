//! Shared test helpers: a DynamoDB table and SQS clients on the moto server that the test command
//! starts (`AWS_ENDPOINT_URL`). Without it, AWS tests are skipped — unless `A2A_REQUIRE_AWS=1`
//! (set by scripts/test), where a missing server is a failure.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use a2a::adapters::aws::{resources, sdk_config, DynamoStore};
use a2a::page_token::PageTokens;

pub fn aws_available() -> bool {
    let set = std::env::var("AWS_ENDPOINT_URL").is_ok_and(|v| !v.is_empty());
    if !set {
        assert!(std::env::var("A2A_REQUIRE_AWS").is_err(), "A2A_REQUIRE_AWS is set but AWS_ENDPOINT_URL is not");
        eprintln!("AWS_ENDPOINT_URL not set: skipping the AWS half of this test (scripts/test runs it on moto)");
    }
    set
}

/// A fresh table (unique name) on moto.
pub async fn dynamo_store(secret: &str) -> Arc<DynamoStore> {
    let sdk = sdk_config().await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let table = format!("t-{}", uuid::Uuid::new_v4().simple());
    resources::ensure_table(&client, &table, true).await.unwrap();
    Arc::new(DynamoStore::new(
        client,
        table,
        PageTokens::new(secret.as_bytes().to_vec()),
        Some(std::time::Duration::from_secs(86_400)),
    ))
}

pub async fn sqs_client() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config().await)
}
