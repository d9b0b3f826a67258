"""A finished run's results read back, and what the ``hardneg`` command shows or writes beside them: a run's files
found from its name (:mod:`.run_files`), one query of its hard-negative list as text (:mod:`.query_view`), runs
compared query by query from their files (:mod:`.comparison`; as text: :mod:`.comparison_text`), where an
``--output`` may be written without harming the results (:mod:`.output_paths`) and data made safe to print on a
terminal (:mod:`.terminal`). The exports and the ``hardneg`` commands read them."""
