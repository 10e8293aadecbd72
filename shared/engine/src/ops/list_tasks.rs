//! ListTasks: JSON-RPC `ListTasks`, `GET /tasks`, spec §3.1.4.
//!
//! Only the caller's tasks, newest status first, cursor pagination with opaque tokens; artifacts are
//! left out entirely unless `includeArtifacts`; history only with `historyLength` > 0 (the server
//! default for ListTasks is none); `nextPageToken` is always present ("" at the end). A page also
//! stops at a byte budget (`EngineConfig::list_page_bytes`), so what one request builds is bounded
//! whatever the page size and the tasks' sizes.

use crate::engine::{CallContext, Engine};
use crate::ports::TaskQuery;
use a2a_protocol::error::Result;
use a2a_protocol::types::size::task_size;
use a2a_protocol::types::{ListTasksRequest, ListTasksResponse, TaskState, Validate};

pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 100;

pub async fn list_tasks(engine: &Engine, ctx: &CallContext, req: ListTasksRequest) -> Result<ListTasksResponse> {
    req.validate("")?;
    let page_size = match req.page_size {
        None | Some(0) => DEFAULT_PAGE_SIZE,
        Some(n) => usize::try_from(n).unwrap_or(DEFAULT_PAGE_SIZE).min(MAX_PAGE_SIZE),
    };
    let query = TaskQuery {
        owner: ctx.principal.id.clone(),
        context_id: (!req.context_id.is_empty()).then(|| req.context_id.clone()),
        status: (req.status != TaskState::Unspecified).then_some(req.status),
        status_after: req.status_timestamp_after,
        page_size,
        page_token: req.page_token.clone(),
    };
    let page = engine.store.list(&query).await?;
    let include_artifacts = req.include_artifacts.unwrap_or(false);
    // ListTasks leaves history out unless asked for it: a page stays one query on every store.
    let history_length = req.history_length.unwrap_or(0);
    let hydrated = include_artifacts || history_length > 0;
    let listed = page.records.len();
    let mut tasks = Vec::with_capacity(listed);
    let mut bytes = 0;
    for record in page.records {
        if !tasks.is_empty() && bytes >= engine.config.list_page_bytes {
            break;
        }
        let record = if hydrated { engine.store.hydrate(record).await? } else { record };
        let mut task = record.task;
        if include_artifacts {
            task.artifacts.get_or_insert_with(Vec::new);
        } else {
            task.artifacts = None;
        }
        super::trim_history(&mut task, Some(history_length), None);
        bytes += task_size(&task);
        tasks.push(task);
    }
    let next_page_token = if tasks.len() < listed {
        // The page stopped at its byte budget: the store's token for a page of exactly that many
        // tasks continues right after the last one kept (tasks that moved in between move as they
        // do between any two pages).
        engine.store.list(&TaskQuery { page_size: tasks.len(), ..query }).await?.next_page_token
    } else {
        page.next_page_token
    };
    Ok(ListTasksResponse {
        page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
        total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        next_page_token,
        tasks,
    })
}
