"""Rule markdown_page: a Markdown report (the summary, its tables, the PQ matrix) → an HTML page of the Snakemake
report."""

from hardneg.io.logs import log_to
from hardneg.report.pages import markdown_page

log_to(snakemake.log[0])
markdown_page(snakemake.input[0], snakemake.output[0], snakemake.params.title)
