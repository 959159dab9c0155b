mod batch;
mod brief;
mod claims;
mod parallel;
mod prompts;
mod proof;
mod run;
mod support;
