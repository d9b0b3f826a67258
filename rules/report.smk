# What `snakemake --report results/report.html` shows beyond the other stages' report() outputs: the hard-negative
# viewer of each run with a list of its own (mined or imported), and the Markdown reports (summary, tables, PQ
# matrix) as pages. Snakemake's report shows images, HTML and PDF in place and offers other files (Markdown,
# Parquet) only for download, so Markdown tables come as HTML pages (hardneg.report.pages). Captions live in
# workflow/report/. The report holds the report() outputs of the jobs behind the requested target (by default the
# config's `targets`); the viewer of a run's list, mined or imported, is one of its reports (PLAN.reports), built
# with its metrics.


rule hardneg_viewer:
    input:
        # inputs by name, as PLAN.mining.viewer_inputs gives them for the job: audit, audit_summary, corpus, hardnegs,
        #   pool, positives, qrels, queries, ranking, reference, selection
        unpack(lambda w: PLAN.mining.viewer_inputs(w.run)),
    output:
        viewer=update(
            report(
                LAYOUT.viewer("{run}"),
                caption="../workflow/report/hardnegs_viewer.rst",
                category="Hard negatives",
                labels={"run": "{run}", "page": "hard-negative viewer"},
            )
        ),
    wildcard_constraints:
        run=LISTED,
    params:
        miner=lambda w: PLAN.mining.viewer_miner(w.run),  # None for an imported list
        imported=lambda w: PLAN.mining.imported_list(w.run),  # its folder, for the caption; None for a mined list
        split=lambda w: PLAN.train_split(w.run),
        queries_file=split_file_of("queries", lambda w: PLAN.train_split(w.run)),
        qrels_file=split_file_of("qrels", lambda w: PLAN.train_split(w.run)),
        depth=lambda w: run_params(w.run)["mining"]["depth"],
        seed=lambda w: PLAN.seed(w.run),
        viewer=config["viewer"],
    message:
        "the hard-negative viewer of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "hardneg_viewer"),
    benchmark:
        LAYOUT.benchmark("{run}", "hardneg_viewer")
    threads: 1
    resources:
        **rule_resources("hardneg_viewer", mem_mb=4000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/hardneg_viewer.py"


rule markdown_page:
    input:
        lambda w: PLAN.report.markdown_pages()[w.page]["markdown"],
    output:
        update(
            report(
                "{page}.html",
                caption="../workflow/report/markdown_page.rst",
                category=lambda w: PLAN.report.markdown_pages()[w.page]["category"],
                labels=lambda w: {"page": PLAN.report.markdown_pages()[w.page]["title"]},
            )
        ),
    wildcard_constraints:
        page=names_regex(PLAN.report.markdown_pages()),
    params:
        title=lambda w: PLAN.report.markdown_pages()[w.page]["title"],
        caption=lambda w: caption_text(PLAN.report.markdown_pages()[w.page]["caption"]),
    message:
        "the report page {wildcards.page}.html (log: {log})"
    log:
        "{page}.html.log",
    benchmark:
        "{page}.html.tsv"
    threads: 1
    resources:
        **rule_resources("markdown_page", mem_mb=500, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/markdown_page.py"


rule run_graph:
    output:
        update(
            report(
                LAYOUT.run_graph(),
                caption="../workflow/report/run_graph.rst",
                category="Summary",
                labels={"page": "graph of the runs"},
            )
        ),
    params:
        graph=lambda w: PLAN.report.run_graph_runs(),
    message:
        "the graph of the report's runs (log: {log})"
    log:
        LAYOUT.table_log("run_graph"),
    benchmark:
        LAYOUT.table_benchmark("run_graph")
    threads: 1
    resources:
        **rule_resources("run_graph", mem_mb=500, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/run_graph.py"


rule report:
    # What `make report` shows (`snakemake --cores all report`, then `snakemake report --report
    # results/report.html`): the metrics of the report's runs (report.runs and the runs behind them), the graph of
    # those runs, their summary and tables, and the figures whose runs are all among them. After the runs are
    # built it makes only pages and figures; its message names what it leaves out.
    input:
        PLAN.report.report_targets(),
    message:
        PLAN.report.report_message()


rule paper:
    # Everything the papers' comparison shows for this config: its targets, the summary and its tables, and every
    # figure the config can build. `snakemake --cores all paper`, then `snakemake paper --report results/report.html`.
    input:
        PLAN.report.paper_targets(),
