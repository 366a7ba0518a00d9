"""Measurement rules: pure decisions about how long to time a backend (see each module)."""
