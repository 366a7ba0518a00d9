"""Serving a saved tuned model: its facts (saved.py), the HTTP endpoint's logic
(endpoint.py), Ray Serve (ray_serve.py, the only module importing Ray here), the one-call
API (api.py) and the Triton model repository export (triton_export.py)."""
