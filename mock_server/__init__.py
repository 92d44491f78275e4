"""A deterministic CPU stand-in for vLLM's TITO API."""
