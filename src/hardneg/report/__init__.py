"""Pages of the Snakemake report: Markdown tables as HTML pages (:mod:`.pages`), the hard-negative viewer
(:mod:`.viewer`) and the comparison of runs query by query (:mod:`.comparison_page`)."""
