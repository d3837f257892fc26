//! The LLM memory model: every memory task through an OpenAI-compatible chat-completions endpoint.
