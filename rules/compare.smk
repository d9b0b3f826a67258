# Comparisons of runs query by query (the config's `compare` list): one page per comparison,
# results/tables/compare_<name>.html (hardneg.report.comparison_page), built when asked for and by the `paper`
# target (PLAN.report.paper_targets), so the report shows them under "Comparisons". `hardneg compare` prints the same.


rule compare:
    input:
        # inputs by name, as PLAN.compare.comparison_inputs gives them for the job: config, corpus, hardnegs, metrics,
        #   per_query, qrels, queries, rankings
        unpack(lambda w: PLAN.compare.comparison_inputs(w.comparison)),
    output:
        page=update(
            report(
                PLAN.compare.comparison_page("{comparison}"),
                caption="../workflow/report/compare.rst",
                category="Comparisons",
                labels={"comparison": "{comparison}"},
            )
        ),
    wildcard_constraints:
        comparison=names_regex(PLAN.compare.comparisons()),
    params:
        settings=lambda w: PLAN.compare.comparisons()[w.comparison],
        results=lambda w, output: results_folder(output.page),
    message:
        "the comparison {wildcards.comparison} (log: {log})"
    log:
        LAYOUT.table_log("compare_{comparison}"),
    benchmark:
        LAYOUT.table_benchmark("compare_{comparison}")
    threads: 1
    resources:
        **rule_resources("compare", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/compare.py"
