//! ListTasks: a page is a walk of the in-memory indexes ([`crate::catalog`], the memory store's
//! [`ListIndex`](a2a_engine::task_index::ListIndex)) from the cursor, newest status first, for one
//! key more than the page — O(page), whatever the number of tasks — then one read of each listed
//! task's row. A first page counts the matching tasks; the total rides in the page token (sealed with
//! a key kept in the file, so tokens outlive a restart), as on the other stores.

use parking_lot::Mutex;

use crate::catalog::Catalog;
use crate::rows::{micros, read_row};
use crate::writer::{snapshot, Readers};
use a2a_engine::page_token::PageTokens;
use a2a_engine::ports::{TaskPage, TaskQuery, TaskRecord};
use a2a_engine::task_index::{open_cursor, seal_cursor, Scan};
use a2a_protocol::error::Result;
use a2a_protocol::types::Task;

/// A page of `q`: keys from the catalog, rows read on `readers`, the token sealed with `tokens`.
pub(crate) fn page(
    catalog: &Mutex<Catalog>,
    readers: &Readers,
    tokens: &PageTokens,
    q: &TaskQuery,
) -> Result<TaskPage> {
    let cursor = open_cursor(tokens, &q.page_token)?;
    let scan = Scan {
        owner: &q.owner,
        context: q.context_id.as_deref(),
        state: q.status,
        after: q.status_after.map(micros),
        below: cursor.as_ref().map(|(key, _)| key.clone()),
        limit: q.page_size + 1,
        count: cursor.is_none(),
    };
    let (mut keys, rows, counted) = {
        let catalog = catalog.lock();
        let (keys, counted) = catalog.scan(&scan);
        let rows: Vec<Option<i64>> = keys.iter().take(q.page_size).map(|(_, id)| catalog.row(id)).collect();
        (keys, rows, counted)
    };
    let total_size = counted.or(cursor.map(|(_, total)| total)).unwrap_or(0);
    let more = keys.len() > q.page_size;
    keys.truncate(q.page_size);
    let next_page_token = match (more, keys.last()) {
        (true, Some(last)) => seal_cursor(tokens, last, total_size),
        _ => String::new(),
    };
    // A task deleted since the walk is left out of the page.
    let records = readers.with(|conn| {
        snapshot(conn, |conn| {
            let mut records = Vec::with_capacity(rows.len());
            for row in rows.into_iter().flatten() {
                if let Some(stored) = read_row(conn, row)? {
                    records.push(summary(stored.record));
                }
            }
            Ok(records)
        })
    })?;
    Ok(TaskPage { records, next_page_token, total_size })
}

/// A page entry without history and artifacts; `hydrate` gives the whole task.
fn summary(record: TaskRecord) -> TaskRecord {
    TaskRecord { task: Task { artifacts: None, history: Vec::new(), ..record.task }, ..record }
}
