//! Integration tests of the command policy: the corpus, property tests, the gate,
//! and the kernel sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
