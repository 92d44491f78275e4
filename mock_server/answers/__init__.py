"""Answer bodies and stream chunks, framed exactly as vLLM sends them."""
