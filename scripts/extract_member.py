"""Rule extract_member: one member of a downloaded tar archive (the config's `downloads`), streamed to its path."""

from hardneg.datasets.download import extract_member
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
extract_member(snakemake.input.archive, snakemake.params.member, snakemake.output[0], snakemake.params.md5)
