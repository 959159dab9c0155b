mod brief;
mod parallel;
mod prompts;
mod proof;
mod run;
mod support;
