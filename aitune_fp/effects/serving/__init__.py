"""Serving's tensor work: request bodies to tensors and back (codec.py), requests merged
into batches and outputs split back (batching.py)."""
