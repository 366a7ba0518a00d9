"""A tuning run as data (:class:`~aitune_fp.core.record.run_record.RunRecord`) and its
JSON form: one writer (``encode``/``dumps``) and one reader (``decode``/``loads``)."""
