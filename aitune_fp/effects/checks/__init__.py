"""Checking a candidate against eager: outputs, accuracy, TF32 and the precheck."""
