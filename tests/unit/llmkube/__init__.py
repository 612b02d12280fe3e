"""LLMKube Models: sources, hardware, GGUF headers, drift, state, verify Jobs."""
