"""Render -> generate -> derender: the OpenAI-compatible front, the render and derender
endpoints, and the tokenizer endpoints."""
