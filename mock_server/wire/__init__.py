"""The mock on the wire: vLLM-shaped errors, raw ASGI sends, request bodies as JSON."""
