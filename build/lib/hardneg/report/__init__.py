"""Pages of the Snakemake report: Markdown tables as HTML pages (:mod:`.pages`) and the hard-negative viewer
(:mod:`.viewer`)."""
