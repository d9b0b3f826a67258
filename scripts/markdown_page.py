"""Rules rendering a Markdown report as a page of the Snakemake report (pq_matrix_page): Markdown → HTML."""

from hardneg.logs import log_to
from hardneg.pages import markdown_page

log_to(snakemake.log[0])
markdown_page(snakemake.input[0], snakemake.output[0], snakemake.params.title)
