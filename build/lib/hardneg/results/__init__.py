"""A finished run's results read back: its files found from its name (:mod:`.run_files`) and one query of its
hard-negative list as text (:mod:`.query_view`). The exports and the ``hardneg audit`` command read them."""
