"""Rule run_graph: the graph of the report's runs (which run feeds which) as an HTML page of the Snakemake report."""

from hardneg.io.logs import log_to
from hardneg.report.run_graph import write_run_graph

log_to(snakemake.log[0])
write_run_graph(snakemake.params.graph, snakemake.output[0])
