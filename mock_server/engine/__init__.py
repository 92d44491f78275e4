"""The engine: a toy model with a known distribution, its tokenizer, sequences, and the
request lifecycle (`core`)."""
