mod brief;
mod parallel;
mod prompts;
mod run;
mod support;
