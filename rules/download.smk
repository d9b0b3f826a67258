# Raw data the workflow fetches itself (the config's `downloads`, hardneg.datasets.download): each file from its URL,
# kept only when its MD5 matches, or one member of a downloaded tar archive. A dataset naming these paths gets them
# as the first jobs of its DAG. Downloads run on the machine Snakemake runs on (localrules): cluster nodes often have
# no internet access. Their logs: results/datasets/_downloads/logs/<path>.log (no dataset or run name starts with _).
from hardneg.datasets.download import downloaded_files, extracted_files

DOWNLOADS = downloaded_files(config)
EXTRACTED = extracted_files(config)


localrules:
    download,


rule download:
    output:
        update("{download}"),
    wildcard_constraints:
        download=names_regex(DOWNLOADS),
    params:
        # the content's identity: a new digest fetches again; a new URL or header alone (a mirror) does not
        md5=lambda w: DOWNLOADS[w.download]["md5"],
    message:
        "download {wildcards.download} (log: {log})"
    log:
        f"{LAYOUT.root}/datasets/_downloads/logs/{{download}}.log",
    retries: 1  # a transfer cut short is tried once more
    threads: 1
    resources:
        **rule_resources("download", mem_mb=500, runtime=360),
    conda:
        "../environment.yml"
    script:
        "../scripts/download.py"


rule extract_member:
    input:
        archive=lambda w: EXTRACTED[w.member_path]["archive"],
    output:
        update("{member_path}"),
    wildcard_constraints:
        member_path=names_regex(EXTRACTED),
    params:
        member=lambda w: EXTRACTED[w.member_path]["member"],
        md5=lambda w: EXTRACTED[w.member_path]["md5"],
    message:
        "extract {wildcards.member_path} (log: {log})"
    log:
        f"{LAYOUT.root}/datasets/_downloads/logs/{{member_path}}.log",
    threads: 1
    resources:
        **rule_resources("extract_member", mem_mb=500, runtime=60),
    conda:
        "../environment.yml"
    script:
        "../scripts/extract_member.py"
