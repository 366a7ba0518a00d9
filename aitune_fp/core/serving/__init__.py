"""Serving as data: the batching plan derived from a tune (plan.py), the request payload's
schema and its checks (schema.py), and a Triton model configuration as text (triton.py).
Nothing here opens a socket, a device or a file."""
