//! Test support: a scripted OpenAI-compatible loopback server with injected faults.
