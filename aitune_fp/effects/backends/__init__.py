"""Inference backends: one module per backend, holding its frozen config, the declaration
the rest of the package derives from (:class:`~.base.Declaration`) and its build effect.

Nothing is imported here, so importing a backend module loads only torch; each inference
SDK is imported inside its own module's functions. ``registry`` finds them all (every
config class in a public module of this package).
"""
