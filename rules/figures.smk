# The papers' figures: each a PNG (collected by `snakemake --report` with its caption) and the data it draws,
# under results/figures/. What a figure reads comes from the plan (PLAN.figure_inputs), from the `figures` config.
# Each rule gets only its own figure's config keys (params), so changing another figure re-draws nothing.
FIGURES_CONFIG = config["figures"]


# `snakemake figures`: every figure the config can build.
rule figures:
    input:
        PLAN.figure_targets(),


rule figure_pairwise_errors:
    input:
        unpack(lambda w: PLAN.figure_inputs("pairwise_errors")),
    output:
        data=LAYOUT.figure("pairwise_errors", "parquet"),
        png=report(LAYOUT.figure("pairwise_errors", "png"), caption="../workflow/report/pairwise_errors.rst",
                   category="Figures"),
    params:
        runs=FIGURES_CONFIG["pairwise_errors"]["runs"],
        measures=FIGURES_CONFIG["pairwise_errors"]["measures"],
    log:
        LAYOUT.experiment("figures", "logs/pairwise_errors.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/pairwise_errors.tsv")
    threads: 1
    resources:
        **rule_resources("figure_pairwise_errors", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_pairwise_errors.py"


rule figure_training_curves:
    input:
        unpack(lambda w: PLAN.figure_inputs("training_curves")),
    output:
        data=LAYOUT.figure("training_curves", "parquet"),
        png=report(LAYOUT.figure("training_curves", "png"), caption="../workflow/report/training_curves.rst",
                   category="Figures"),
    params:
        name="training_curves",
        runs=FIGURES_CONFIG["training_curves"]["runs"],
        labels=FIGURES_CONFIG["training_curves"]["labels"],
    log:
        LAYOUT.experiment("figures", "logs/training_curves.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/training_curves.tsv")
    threads: 1
    resources:
        **rule_resources("figure_training_curves", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_dev_curves.py"


rule figure_adore_vs_adore_l:
    input:
        unpack(lambda w: PLAN.figure_inputs("adore_vs_adore_l")),
    output:
        data=LAYOUT.figure("adore_vs_adore_l", "parquet"),
        png=report(LAYOUT.figure("adore_vs_adore_l", "png"), caption="../workflow/report/adore_vs_adore_l.rst",
                   category="Figures"),
    params:
        name="adore_vs_adore_l",
        runs=FIGURES_CONFIG["adore_vs_adore_l"]["runs"],
        labels=FIGURES_CONFIG["adore_vs_adore_l"]["labels"],
    log:
        LAYOUT.experiment("figures", "logs/adore_vs_adore_l.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/adore_vs_adore_l.tsv")
    threads: 1
    resources:
        **rule_resources("figure_adore_vs_adore_l", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_dev_curves.py"


rule figure_tsne:
    input:
        unpack(lambda w: PLAN.figure_inputs("tsne")),
    output:
        data=LAYOUT.figure("tsne", "parquet"),
        png=report(LAYOUT.figure("tsne", "png"), caption="../workflow/report/tsne.rst", category="Figures"),
    params:
        run=FIGURES_CONFIG["tsne"]["run"],
        qid=FIGURES_CONFIG["tsne"]["qid"],
        negatives=FIGURES_CONFIG["tsne"]["negatives"],
        perplexity=FIGURES_CONFIG["tsne"]["perplexity"],
        docs=lambda w: PLAN.doc_run(FIGURES_CONFIG["tsne"]["run"]),
        split=EVAL_SPLIT,
        seed=config["seed"],
    log:
        LAYOUT.experiment("figures", "logs/tsne.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/tsne.tsv")
    threads: 1
    resources:
        **rule_resources("figure_tsne", mem_mb=2000, runtime=10),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_tsne.py"


rule figure_pq_matrix:
    input:
        unpack(lambda w: PLAN.figure_inputs("pq_matrix")),
    output:
        data=LAYOUT.figure("pq_matrix", "parquet"),
        png=report(LAYOUT.figure("pq_matrix", "png"), caption="../workflow/report/pq_matrix_heatmap.rst", category="Figures"),
    params:
        measure=FIGURES_CONFIG["pq_matrix"]["measure"],
    log:
        LAYOUT.experiment("figures", "logs/pq_matrix.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/pq_matrix.tsv")
    threads: 1
    resources:
        **rule_resources("figure_pq_matrix", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_pq_matrix.py"


rule figure_hybrid_alpha:
    input:
        unpack(lambda w: PLAN.figure_inputs("hybrid_alpha")),
    output:
        data=LAYOUT.figure("hybrid_alpha", "parquet"),
        png=report(LAYOUT.figure("hybrid_alpha", "png"), caption="../workflow/report/hybrid_alpha.rst",
                   category="Figures"),
    params:
        run=FIGURES_CONFIG["hybrid_alpha"]["run"],
    log:
        LAYOUT.experiment("figures", "logs/hybrid_alpha.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/hybrid_alpha.tsv")
    threads: 1
    resources:
        **rule_resources("figure_hybrid_alpha", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_hybrid_alpha.py"


rule figure_gradient_norms:
    input:
        unpack(lambda w: PLAN.figure_inputs("gradient_norms")),
    output:
        data=LAYOUT.figure("gradient_norms", "parquet"),
        png=report(LAYOUT.figure("gradient_norms", "png"), caption="../workflow/report/gradient_norms.rst",
                   category="Figures"),
    params:
        runs=FIGURES_CONFIG["gradient_norms"]["runs"],
        labels=FIGURES_CONFIG["gradient_norms"]["labels"],
        reference=PLAN.gradient_norm_reference(),
    log:
        LAYOUT.experiment("figures", "logs/gradient_norms.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/gradient_norms.tsv")
    threads: 1
    resources:
        **rule_resources("figure_gradient_norms", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_gradient_norms.py"


rule figure_epoch_curves:
    input:
        unpack(lambda w: PLAN.figure_inputs("epoch_curves")),
    output:
        data=LAYOUT.figure("epoch_curves", "parquet"),
        png=report(LAYOUT.figure("epoch_curves", "png"), caption="../workflow/report/epoch_curves.rst",
                   category="Figures"),
    params:
        runs=FIGURES_CONFIG["epoch_curves"]["runs"],
        labels=FIGURES_CONFIG["epoch_curves"]["labels"],
    log:
        LAYOUT.experiment("figures", "logs/epoch_curves.log"),
    benchmark:
        LAYOUT.experiment("figures", "benchmarks/epoch_curves.tsv")
    threads: 1
    resources:
        **rule_resources("figure_epoch_curves", mem_mb=1000, runtime=5),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure_epoch_curves.py"
