"""The user's samples as an input spec, and the calls a tuned backend is built for."""
