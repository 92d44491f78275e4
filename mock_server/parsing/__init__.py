"""Reading a request the way vLLM's pydantic models and checks do."""
