//! Port implementations. `memory` is the embedded default and is always built.

pub mod memory;

#[cfg(feature = "aws")]
pub mod aws;
#[cfg(feature = "push")]
pub mod edge_publisher;
#[cfg(feature = "runtime")]
pub mod poll_hub;
