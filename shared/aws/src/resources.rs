//! Creates the table (with its GSIs and TTL) and the FIFO queues with their dead-letter queues
//! when they are missing (`a2a-local --store aws --create-resources`); waits for the table to be
//! ACTIVE. Production creates them from `infra/` instead.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

use a2a_protocol::error::{A2aError, Result};

fn err(what: &str, e: impl std::fmt::Debug) -> A2aError {
    A2aError::internal(format!("{what}: {e:?}"))
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement> {
    KeySchemaElement::builder().attribute_name(name).key_type(kind).build().map_err(|e| err("key schema", e))
}

fn gsi(name: &str, pk: &str, sk: &str) -> Result<GlobalSecondaryIndex> {
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .key_schema(key(pk, KeyType::Hash)?)
        .key_schema(key(sk, KeyType::Range)?)
        .projection(Projection::builder().projection_type(ProjectionType::All).build())
        .build()
        .map_err(|e| err("GSI", e))
}

/// Creates the table if missing and waits (bounded) until it and its indexes are ACTIVE.
pub async fn ensure_table(client: &aws_sdk_dynamodb::Client, table: &str, ttl: bool) -> Result<()> {
    let mut create = client.create_table().table_name(table).billing_mode(BillingMode::PayPerRequest);
    for name in ["PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"] {
        let def = AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| err("attribute", e))?;
        create = create.attribute_definitions(def);
    }
    let create = create
        .key_schema(key("PK", KeyType::Hash)?)
        .key_schema(key("SK", KeyType::Range)?)
        .global_secondary_indexes(gsi("GSI1", "GSI1PK", "GSI1SK")?)
        .global_secondary_indexes(gsi("GSI2", "GSI2PK", "GSI2SK")?);
    match create.send().await {
        Ok(_) => tracing::info!(table, "table created"),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => {
            tracing::debug!(table, "table exists");
        }
        Err(e) => return Err(err("CreateTable", e)),
    }
    for _ in 0..300 {
        let desc = client.describe_table().table_name(table).send().await.map_err(|e| err("DescribeTable", e))?;
        let t = desc.table();
        let table_ready = t.and_then(|t| t.table_status()) == Some(&TableStatus::Active);
        let indexes_ready = t
            .map(|t| t.global_secondary_indexes().iter().all(|g| g.index_status() == Some(&IndexStatus::Active)))
            .unwrap_or(false);
        if table_ready && indexes_ready {
            if ttl {
                let spec = TimeToLiveSpecification::builder()
                    .attribute_name("exp")
                    .enabled(true)
                    .build()
                    .map_err(|e| err("TTL", e))?;
                if let Err(e) =
                    client.update_time_to_live().table_name(table).time_to_live_specification(spec).send().await
                {
                    // Already enabled is the usual reason; anything else is worth a warning only.
                    tracing::debug!(error = ?e, "UpdateTimeToLive");
                }
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(A2aError::internal(format!("table {table} did not become ACTIVE within 5 minutes")))
}

/// Creates `<name>.fifo` with its dead-letter queue `<name>-dlq.fifo` (after `max_receives`
/// receives a message moves there) and returns (queue URL, dead-letter queue URL).
pub async fn ensure_fifo_queue(
    client: &aws_sdk_sqs::Client,
    name: &str,
    visibility: Duration,
    max_receives: u32,
) -> Result<(String, String)> {
    let dlq = client
        .create_queue()
        .queue_name(format!("{name}-dlq.fifo"))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::MessageRetentionPeriod, "1209600")
        .send()
        .await
        .map_err(|e| err("CreateQueue (DLQ)", e))?;
    let dlq_url = dlq.queue_url().unwrap_or_default().to_string();
    let arn = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| err("GetQueueAttributes", e))?
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap_or_default();
    let redrive =
        serde_json::json!({"deadLetterTargetArn": arn, "maxReceiveCount": max_receives.to_string()}).to_string();
    let queue = client
        .create_queue()
        .queue_name(format!("{name}.fifo"))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::VisibilityTimeout, visibility.as_secs().to_string())
        .attributes(QueueAttributeName::RedrivePolicy, redrive)
        .send()
        .await
        .map_err(|e| err("CreateQueue", e))?;
    Ok((queue.queue_url().unwrap_or_default().to_string(), dlq_url))
}
