# The ADORE PQ experiment (Table 3 of the paper): ADORE trained with index A, evaluated with index B. Its runs,
# inputs, writers and report pages are hardneg.experiments.pq_matrix, whose declaration (EXPERIMENT) the Snakefile
# includes this file for.
from hardneg.experiments import pq_matrix as PQ_MATRIX


rule pq_matrix:
    input:
        lambda w: [path for _, _, metrics in PQ_MATRIX.cells(PLAN) for path in metrics],
    output:
        table=update(LAYOUT.experiment("pq_matrix", "matrix.parquet")),
        markdown=update(LAYOUT.experiment("pq_matrix", "matrix.md")),
    params:
        indexes=lambda w: config["pq_matrix"]["indexes"],
        seeds=lambda w: [len(metrics) for _, _, metrics in PQ_MATRIX.cells(PLAN)],
        measures=config["evaluation"]["measures"],
    message:
        "the PQ matrix experiment (log: {log})"
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


rule adore_index_table:
    input:
        # inputs by name, as PQ_MATRIX.index_table_inputs gives them for the job: metrics, train_log
        unpack(lambda w: PQ_MATRIX.index_table_inputs(PLAN)),
    output:
        markdown=update(LAYOUT.table("adore_indexes", "md")),
        table=update(report(LAYOUT.table("adore_indexes", "parquet"), caption="../workflow/report/adore_indexes.rst",
                            category="Summary")),
    params:
        indexes=lambda w: [index for index, _ in PQ_MATRIX.index_runs(PLAN)],
        runs=lambda w: [run for _, run in PQ_MATRIX.index_runs(PLAN)],
        benchmarks=lambda w: PLAN.report.training_benchmarks([run for _, run in PQ_MATRIX.index_runs(PLAN)]),
        measures=lambda w: PLAN.report.summary_measures(),
        docs=lambda w: config["pq_matrix"]["docs"],
    message:
        "the table of ADORE's indexes (log: {log})"
    log:
        LAYOUT.table_log("adore_indexes"),
    benchmark:
        LAYOUT.table_benchmark("adore_indexes")
    threads: 1
    resources:
        **rule_resources("adore_index_table", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/adore_index_table.py"
