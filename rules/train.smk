# Training of dense retrievers and re-rankers: one rule for every method that trains; what a run reads comes from the
# plan (its method's input roles), what its training step is from the method registry.


rule train_dense:
    input:
        # inputs by name, as PLAN.train_inputs gives them for the job: bm25, cache, doc_embeddings, hard_negatives,
        #   init, negatives, qrels, state, teacher, teacher_positive_probabilities, teacher_probabilities, train_index
        unpack(lambda w: PLAN.train_inputs(w.run)),
    output:
        model=update(directory(LAYOUT.model("{run}"))),
        train_log=update(LAYOUT.train_log("{run}")),
        timings=update(LAYOUT.train_timings("{run}")),
    wildcard_constraints:
        run=names_regex(PLAN.step_trained_runs),
    params:
        resolved=lambda w: PLAN.training_slice(w.run),
        tokenizer=lambda w: PLAN.tokenizer_source(w.run),
        checkpoints=lambda w: LAYOUT.checkpoints(w.run),
        tensorboard=lambda w: LAYOUT.tensorboard(w.run),  # a log written while training runs, not an output
        train_split=lambda w: PLAN.train_split(w.run),
        qrels_file=split_file_of("qrels", lambda w: PLAN.train_split(w.run)),
        method_modules=lambda w: PLAN.method_modules(w.run),
    message:
        "train run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "train"),
    benchmark:
        LAYOUT.benchmark("{run}", "train")
    threads: 2
    resources:
        **rule_resources("train_dense", mem_mb=8000, runtime=240),
        gpu=lambda w: PLAN.train_gpus(w.run),
    conda:
        "../environment.yml"
    script:
        "../scripts/train_dense.py"
