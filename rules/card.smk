# The mining card of each mining run's hard negatives (hardneg.mining.card): the digest of every input the list was
# mined from (the miner's model and tokenizer, the corpus, queries and qrels, the ranking, the index, the pool and
# what it was built from), the search, pool and policy parameters, the seed, thread counts and library versions,
# and the list's digest. `hardneg verify <run>` checks the files against it and mines the list again. It is one of
# a mining run's reports (PLAN.reports), built with its metrics.


rule mining_card:
    input:
        # inputs by name, as PLAN.mining.card_inputs gives them for the job: bm25_ranking, cache, ce_cache,
        #   ce_candidates, ce_model, ce_positives, corpus, corpus_embeddings, docids, duplicates, hardnegs, index,
        #   model, pool, positives, qrels, queries, ranking
        unpack(lambda w: PLAN.mining.card_inputs(w.run)),
    output:
        card=update(LAYOUT.hardnegs_card("{run}")),
    wildcard_constraints:
        run=names_regex(PLAN.mining.mining_runs),
    params:
        card=lambda w: PLAN.mining.card_params(w.run),
        queries_file=split_file_of("queries", lambda w: PLAN.mining.card_params(w.run)["split"]),
        qrels_file=split_file_of("qrels", lambda w: PLAN.mining.card_params(w.run)["split"]),
        results=lambda w, output: results_folder(output.card),
    message:
        "write the mining card of the hard negatives of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "mining_card"),
    benchmark:
        LAYOUT.benchmark("{run}", "mining_card")
    # as many as the dense search's job (rules/index.smk), whose thread counts the card records: Snakemake gives
    # both the same number on the same --cores
    threads: 2
    resources:
        **rule_resources("mining_card", mem_mb=2000, runtime=30),
    conda:
        "../environment.yml"
    script:
        "../scripts/mining_card.py"
