"""The server under test: what it supports, what it allows, what its engines do, its process."""
