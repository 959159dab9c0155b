//! Harness pieces in process: the brief, the gates, the guard.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
