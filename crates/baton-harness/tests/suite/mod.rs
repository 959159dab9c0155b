mod brief;
mod prompts;
