//! ListTasks on the file's indexes: the page is a walk of one index (`tasks_by_owner`, or
//! `tasks_by_owner_state` with a status filter, or `tasks_by_context` with a context) from the
//! cursor, newest status first, for one row more than the page: O(page), whatever the number of
//! tasks. A first page counts the matching tasks on the same index; the total rides in the page
//! token (sealed with a key kept in the file, so tokens outlive a restart), as on the other stores.

use rusqlite::types::Value;

use crate::error::db_error;
use crate::rows::{micros, RawRow, ROW_COLUMNS};
use crate::writer::Readers;
use a2a_engine::page_token::PageTokens;
use a2a_engine::ports::{TaskPage, TaskQuery, TaskRecord};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::Task;

/// A page's position: the last task's status time (µs) and id, and the total of the first page.
struct Cursor {
    status_us: i64,
    id: String,
    total: usize,
}

fn seal(tokens: &PageTokens, c: &Cursor) -> String {
    tokens.seal(format!("{}|{}|{}", c.status_us, c.total, c.id).as_bytes())
}

fn open(tokens: &PageTokens, token: &str) -> Result<Option<Cursor>> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || A2aError::invalid_field("pageToken", "is malformed");
    let payload = String::from_utf8(tokens.open(token)?).map_err(|_| bad())?;
    let mut it = payload.splitn(3, '|');
    let (Some(t), Some(total), Some(id)) = (it.next(), it.next(), it.next()) else { return Err(bad()) };
    Ok(Some(Cursor {
        status_us: t.parse().map_err(|_| bad())?,
        total: total.parse().map_err(|_| bad())?,
        id: id.to_string(),
    }))
}

/// A page of `q`, read on `readers`, its token sealed with `tokens`.
pub(crate) fn page(readers: &Readers, tokens: &PageTokens, q: &TaskQuery) -> Result<TaskPage> {
    let cursor = open(tokens, &q.page_token)?;
    let mut filter = String::from("owner = ?1");
    let mut args = vec![Value::Text(q.owner.clone())];
    let mut arg = |filter: &mut String, clause: &str, value: Value| {
        args.push(value);
        filter.push_str(&clause.replace('?', &format!("?{}", args.len())));
    };
    if let Some(context) = &q.context_id {
        arg(&mut filter, " AND context_id = ?", Value::Text(context.clone()));
    }
    if let Some(state) = q.status {
        arg(&mut filter, " AND state = ?", Value::Text(state.as_str().to_string()));
    }
    if let Some(after) = q.status_after {
        arg(&mut filter, " AND status_us > ?", Value::Integer(micros(after)));
    }
    let counted_args = args.len();
    let mut walk = filter.clone();
    if let Some(c) = &cursor {
        args.push(Value::Integer(c.status_us));
        args.push(Value::Text(c.id.clone()));
        walk.push_str(&format!(" AND (status_us, id) < (?{}, ?{})", args.len() - 1, args.len()));
    }
    let limit = i64::try_from(q.page_size + 1).unwrap_or(i64::MAX);
    let sql = format!("SELECT {ROW_COLUMNS} FROM tasks WHERE {walk} ORDER BY status_us DESC, id DESC LIMIT {limit}");
    let (rows, total) = readers.with(|conn| {
        crate::writer::snapshot(conn, |conn| {
            let mut select = conn.prepare_cached(&sql).map_err(|e| db_error("list tasks", e))?;
            let rows = select
                .query_map(rusqlite::params_from_iter(args.iter()), RawRow::from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("list tasks", e))?;
            let total = match &cursor {
                Some(c) => c.total,
                None if rows.len() <= q.page_size => rows.len(),
                None => conn
                    .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {filter}"))
                    .and_then(|mut s| {
                        s.query_row(rusqlite::params_from_iter(args[..counted_args].iter()), |r| r.get::<_, usize>(0))
                    })
                    .map_err(|e| db_error("count tasks", e))?,
            };
            Ok((rows, total))
        })
    })?;
    let more = rows.len() > q.page_size;
    let mut records = Vec::with_capacity(rows.len().min(q.page_size));
    let mut last = None;
    for raw in rows.into_iter().take(q.page_size) {
        let (status_us, id) = (raw.status_us, raw.id.clone());
        // A page entry without history and artifacts; `hydrate` gives the whole task.
        records.push(summary(raw.decode()?.record));
        last = Some(Cursor { status_us, id, total });
    }
    let next_page_token = match (more, last) {
        (true, Some(c)) => seal(tokens, &c),
        _ => String::new(),
    };
    Ok(TaskPage { records, next_page_token, total_size: total })
}

fn summary(record: TaskRecord) -> TaskRecord {
    TaskRecord { task: Task { artifacts: None, history: Vec::new(), ..record.task }, ..record }
}
