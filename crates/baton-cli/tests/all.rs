//! End-to-end tests: the real `baton` binary against the test kit's scripted model
//! servers on 127.0.0.1, acting on real temp projects with real bash.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
