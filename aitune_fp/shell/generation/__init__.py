"""The shell of generation tuning: ``tune_generate`` and ``TunedGenerator``."""
