"""Inference backends: one frozen config and one build effect per backend module.

Nothing is imported here, so importing a backend module loads only torch; each inference
SDK is imported inside its own module's functions. ``registry`` lists them all.
"""
