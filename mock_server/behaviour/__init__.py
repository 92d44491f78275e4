"""How the mock behaves: its flags, the vLLM release it plays, its defects and their policies."""
