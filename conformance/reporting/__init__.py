"""Views of the results model: terminal summary, JSON (the source of truth), JUnit XML."""
