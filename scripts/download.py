"""Rule download: one file of the config's `downloads` from its URL, kept only when its MD5 matches."""

from hardneg.datasets.download import download
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
entry = snakemake.config["downloads"][snakemake.wildcards.download]
download(entry["url"], snakemake.output[0], snakemake.params.md5, headers=entry.get("headers"))
