//! The integration tests of the whole host, through the facade `a2a` (one test binary: the
//! crates link once). Each module is one area; `harness` builds an embedded agent called through
//! `Service::handle`, `common` the AWS resources on the moto server the test command starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod harness;

mod client;
mod compat;
mod edge;
mod fuzz;
mod grpc;
mod kms;
mod lambda;
mod limits;
mod push;
mod router;
mod seeds;
mod signing;
mod sqlite;
mod sqs;
mod ssrf;
mod stores;
mod telemetry;
