# The summary of the runs (measures, pairwise errors, paired t-tests against baseline groups) and the
# training-time tables. The runs: summary.runs, else those `targets` names (PLAN.report.summary_runs): the config's,
# never those that happen to be evaluated already.


rule summary:
    input:
        # inputs by name, as PLAN.report.summary_inputs gives them for the job: metrics, per_query
        unpack(lambda w: PLAN.report.summary_inputs()),
    output:
        markdown=update(LAYOUT.summary("md")),
        table=update(report(LAYOUT.summary("parquet"), caption="../workflow/report/summary.rst", category="Summary")),
        tests=update(LAYOUT.summary_tests()),
    params:
        runs=lambda w: PLAN.report.summary_runs(),
        methods=lambda w: PLAN.report.methods_of(PLAN.report.summary_runs()),
        settings=lambda w: PLAN.report.summary_settings(),
    message:
        "the summary table (log: {log})"
    log:
        LAYOUT.table_log("summary"),
    benchmark:
        LAYOUT.table_benchmark("summary")
    threads: 1
    resources:
        **rule_resources("summary", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/summary.py"


rule training_time_table:
    input:
        # inputs by name, as PLAN.report.training_time_inputs gives them for the job: train_log
        unpack(lambda w: PLAN.report.training_time_inputs()),
    output:
        markdown=update(LAYOUT.table("training_time", "md")),
        table=update(report(LAYOUT.table("training_time", "parquet"), caption="../workflow/report/training_time.rst",
                            category="Summary")),
    params:
        runs=lambda w: PLAN.report.training_time_runs(),
        methods=lambda w: PLAN.report.methods_of(PLAN.report.training_time_runs()),
        benchmarks=lambda w: PLAN.report.training_benchmarks(PLAN.report.training_time_runs()),
        reference=lambda w: PLAN.report.speed_reference(),
    message:
        "the training-time table (log: {log})"
    log:
        LAYOUT.table_log("training_time"),
    benchmark:
        LAYOUT.table_benchmark("training_time")
    threads: 1
    resources:
        **rule_resources("training_time_table", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/training_time_table.py"
