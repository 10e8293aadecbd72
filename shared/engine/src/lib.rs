//! The engine: everything between a decoded request and its answer, independent of binding and
//! platform. Its [`ports`] are what it needs from a platform (a task store, queues, a stream hub, a
//! clock, an authenticator, a webhook policy); [`memory`] implements them in process.
//!
//! - [`engine`]: the [`engine::Engine`] (the ports and the card) and its recorder: every event gets
//!   the next sequence number and is folded into its task ([`engine::fold`]).
//! - [`ops`]: one file per operation (spec §3), binding-independent; [`dispatch`]: a decoded
//!   operation in, its result out.
//! - [`runner`]: runs the user's [`executor::AgentExecutor`] for queued turns.
//! - [`auth`]: authenticators (API keys; OIDC bearer tokens with the feature `oidc`).
//! - [`push`] (feature `push`): webhook delivery with retries; [`webhook`] and [`ssrf`]: the rules
//!   every deliverer follows.
//! - [`card`]: the served agent card (and its signatures, feature `signing`).
//! - [`admission`]: what an embedded store may hold and who gives way when it is full;
//!   [`task_index`]: the ListTasks indexes an embedded store keeps in memory.

pub mod admission;
pub mod auth;
pub mod card;
pub mod dispatch;
pub mod engine;
pub mod executor;
pub mod memory;
pub mod metered_store;
#[cfg(feature = "oidc")]
pub mod oidc;
pub mod ops;
pub mod page_token;
#[cfg(feature = "runtime")]
pub mod poll_hub;
pub mod ports;
#[cfg(feature = "push")]
pub mod push;
pub mod runner;
pub mod ssrf;
pub mod task_index;
pub mod webhook;
