# The papers' figures: each a PNG (collected by `snakemake --report` with its caption) and the data it draws,
# under results/figures/. Each figure is declared once, in its module of src/hardneg/figures/ or in its experiment's
# (hardneg.pipeline.figures.FIGURES has them all): what it reads (PLAN.report.figure_inputs, from the `figures`
# config), its params (only its own figure's config keys, so changing another figure re-draws nothing), its
# resources and its drawing, which scripts/figure.py calls.
from hardneg.pipeline.figures import FIGURES

FIGURES_CONFIG = config["figures"]


# `snakemake figures`: every figure the config can build.
rule figures:
    input:
        PLAN.report.figure_targets(),


# One rule figure_<name> per figure (the name the config's `resources` section uses).
for figure_name, figure in FIGURES.items():

    rule:
        name:
            f"figure_{figure_name}"
        input:
            # inputs by name, as PLAN.report.figure_inputs gives them for the job: doc_embeddings, doc_ids, matrix,
            #   per_query, qrels, query_after, query_before, query_ids_after, query_ids_before, ranking_after,
            #   ranking_before, summary, train_logs, tuning
            unpack(lambda w, figure_name=figure_name: PLAN.report.figure_inputs(figure_name)),
        output:
            data=update(LAYOUT.figure(figure_name, "parquet")),
            png=update(report(LAYOUT.figure(figure_name, "png"), caption=f"../workflow/report/{figure.caption}",
                              category="Figures")),
        params:
            name=figure_name,
            **figure.params(FIGURES_CONFIG[figure_name], PLAN),
        message:
            f"draw figure {figure_name} (log: {{log}})"
        log:
            LAYOUT.experiment("figures", f"logs/{figure_name}.log"),
        benchmark:
            LAYOUT.experiment("figures", f"benchmarks/{figure_name}.tsv")
        threads: 1
        resources:
            **rule_resources(f"figure_{figure_name}", **figure.resources),
        conda:
            "../environment.yml"
        script:
            "../scripts/figure.py"
