//! ListTaskPushNotificationConfigs: JSON-RPC `ListTaskPushNotificationConfigs`
//! (0.3 `tasks/pushNotificationConfig/list`), `GET /tasks/{taskId}/pushNotificationConfigs`, §3.1.9.
//! A task holds few configs (at most 16): they come ordered by id, every one in one page unless
//! `pageSize` asks for fewer; the next page's token names the last id a page held.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse};

/// What a page token holds before its config id (so that another listing's token is told apart).
const TOKEN_PREFIX: &str = "config:";

pub async fn list_push_configs(
    engine: &Engine,
    ctx: &CallContext,
    req: ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse> {
    super::push_config_task(engine, ctx, &req, &req.task_id).await?;
    let after = open(&req.page_token)?;
    let mut configs = engine.push_configs.list(&req.task_id).await?;
    configs.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(after) = after {
        configs.retain(|c| c.id.as_str() > after.as_str());
    }
    let size = usize::try_from(req.page_size).unwrap_or(0);
    let next_page_token = match size > 0 && configs.len() > size {
        true => {
            configs.truncate(size);
            configs.last().map(|last| seal(&last.id)).unwrap_or_default()
        }
        false => String::new(),
    };
    Ok(ListTaskPushNotificationConfigsResponse { configs, next_page_token })
}

fn seal(last_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{TOKEN_PREFIX}{last_id}"))
}

/// The id after which the page starts (`None`: the first page).
fn open(token: &str) -> Result<Option<String>> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || A2aError::invalid_field("pageToken", "is not a page token of ListTaskPushNotificationConfigs");
    let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    text.strip_prefix(TOKEN_PREFIX).map(|id| Some(id.to_string())).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_others_are_refused() {
        assert_eq!(open(&seal("b")).unwrap().as_deref(), Some("b"));
        assert_eq!(open("").unwrap(), None);
        for bad in ["garbage!", "Z2FyYmFnZQ", "%%"] {
            let err = open(bad).unwrap_err();
            assert!(err.message.starts_with("pageToken"), "{bad}: {err}");
        }
    }
}
