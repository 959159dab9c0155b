mod brief;
mod prompts;
mod run;
