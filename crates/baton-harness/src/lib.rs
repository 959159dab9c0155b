//! Sessions: initializer and coding sessions with enforced handoff.
