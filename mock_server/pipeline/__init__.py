"""Render -> generate -> derender: the OpenAI-compatible front and the tokenizer endpoints."""
