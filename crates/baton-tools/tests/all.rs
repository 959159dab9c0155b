//! Integration tests of the built-in tools, driven through `Toolbox::call`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
