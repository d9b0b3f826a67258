"""Rule compare: the runs of one comparison of the config's `compare` list (their resolved configs, metrics,
per-query values, rankings, hard negatives and the dataset's texts and qrels) → its HTML page."""

from hardneg.io.logs import log_to
from hardneg.report.comparison_page import write_comparison_page

log_to(snakemake.log[0])
settings = dict(snakemake.params.settings)
write_comparison_page(list(settings["runs"]), snakemake.output.page, results=snakemake.params.results,
                      measure=settings["measure"], split=settings["split"], top=settings["top"],
                      depth=settings["depth"], correction=settings["correction"])
