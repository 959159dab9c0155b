//! The agent loop as a library: sessions against the scripted server, in process.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
