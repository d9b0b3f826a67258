# What `snakemake --report results/report.html` shows beyond the other stages' report() outputs: the hard-negative
# viewer of each mining run, and the PQ matrix as a page. Snakemake's report shows images, HTML and PDF in place and
# offers other files (Markdown, Parquet) only for download, so Markdown tables come as HTML pages (hardneg.pages).
# Captions live in workflow/report/. The report holds the report() outputs of the jobs behind the requested target
# (by default the config's `targets`); a mining run's viewer is one of its reports (PLAN.reports), built with its
# metrics.


rule hardneg_viewer:
    input:
        unpack(lambda w: PLAN.viewer_inputs(w.run)),
    output:
        viewer=report(
            LAYOUT.viewer("{run}"),
            caption="../workflow/report/hardnegs_viewer.rst",
            category="Hard negatives",
            labels={"run": "{run}", "page": "hard-negative viewer"},
        ),
    wildcard_constraints:
        run=MINING,
    params:
        miner=lambda w: PLAN.miner(w.run),
        split=lambda w: PLAN.train_split(w.run),
        depth=lambda w: run_params(w.run)["mining"]["depth"],
        seed=lambda w: PLAN.seed(w.run),
        viewer=config["viewer"],
    log:
        LAYOUT.log("{run}", "hardneg_viewer"),
    benchmark:
        LAYOUT.benchmark("{run}", "hardneg_viewer")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../scripts/hardneg_viewer.py"


rule pq_matrix_page:
    input:
        LAYOUT.experiment("pq_matrix", "matrix.md"),
    output:
        report(
            LAYOUT.experiment("pq_matrix", "matrix.html"),
            caption="../workflow/report/pq_matrix.rst",
            category="Experiments",
            labels={"experiment": "ADORE PQ matrix"},
        ),
    params:
        title="ADORE with product-quantised indexes: trained with index A, evaluated with index B",
    log:
        LAYOUT.experiment("pq_matrix", "logs/pq_matrix_page.log"),
    benchmark:
        LAYOUT.experiment("pq_matrix", "benchmarks/pq_matrix_page.tsv")
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    conda:
        "../environment.yml"
    script:
        "../scripts/markdown_page.py"
