# The ADORE PQ experiment (Table 3 of the paper): ADORE trained with index A, evaluated with index B.


rule pq_matrix:
    input:
        lambda w: [f"{RESULTS}/{pq_matrix_run(a)}/by_index/{index_slug(b)}/metrics.json"
                   for a in config["pq_matrix"]["indexes"] for b in config["pq_matrix"]["indexes"]],
    output:
        table=f"{RESULTS}/pq_matrix/matrix.parquet",
        markdown=f"{RESULTS}/pq_matrix/matrix.md",
    params:
        indexes=lambda w: config["pq_matrix"]["indexes"],
        measures=config["evaluation"]["measures"],
    log:
        f"{RESULTS}/pq_matrix/logs/pq_matrix.log",
    benchmark:
        f"{RESULTS}/pq_matrix/benchmarks/pq_matrix.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../environment.yml"
    script:
        "../scripts/pq_matrix.py"
