"""The final rounds (pure): their plan (``rounds_plan``), one participant's turn
(``burst``), who joins and when they stop (``round_members``), the rounds around the
fold (``final_rounds``) and their lines (``rounds_lines``)."""
