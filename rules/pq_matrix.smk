# The ADORE PQ experiment (Table 3 of the paper): ADORE trained with index A, evaluated with index B.


rule pq_matrix:
    input:
        lambda w: [metrics for _, _, metrics in PLAN.pq_matrix_cells()],
    output:
        table=LAYOUT.experiment("pq_matrix", "matrix.parquet"),
        markdown=LAYOUT.experiment("pq_matrix", "matrix.md"),
    params:
        indexes=lambda w: config["pq_matrix"]["indexes"],
        measures=config["evaluation"]["measures"],
    log:
        LAYOUT.experiment("pq_matrix", "logs/pq_matrix.log"),
    benchmark:
        LAYOUT.experiment("pq_matrix", "benchmarks/pq_matrix.tsv")
    threads: 1
    resources:
        **rule_resources("pq_matrix", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/pq_matrix.py"
