"""Proving the pick: the winner re-measured against its runner-ups, paired, and judged
(pure): who takes part and for how long (``verification_plan``), the judgement
(``judge``), its records (``verification_records``) and its lines (``verification_lines``)."""
