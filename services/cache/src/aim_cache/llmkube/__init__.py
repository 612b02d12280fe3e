"""LLMKube Model support in the cache service."""
