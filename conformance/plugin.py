"""pytest plugin entry point (placeholder until the suite lands; must stay import-cheap)."""
