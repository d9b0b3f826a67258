"""The papers' figures, regenerated from runs' artifacts. One module per figure, each with a function that
computes the figure's data (an Arrow table of a kind declared in :mod:`hardneg.io.artifacts`, written as
``results/figures/<name>.parquet``), one that draws it (matplotlib, ``results/figures/<name>.png``) and one that
does both, and the figure's declaration (:class:`~hardneg.figures.declaration.Figure`: what it reads, its
settings, its drawing), registered in :data:`FIGURES`:

* ``pairwise_errors`` (:mod:`.pairwise_errors`): per-query pairwise errors of several runs as CDFs (STAR/ADORE
  paper, Fig. 3);
* ``training_curves`` and ``adore_vs_adore_l`` (:mod:`.curves`): dev MRR@10 against optimiser steps, of random,
  static and dynamic negatives (Fig. 4) and of ADORE and ADORE\\L (Fig. 5);
* ``tsne`` (:mod:`.tsne`): one query, its relevant documents and its top negatives before and after ADORE
  (Fig. 6);
* ``hybrid_alpha`` (:mod:`.hybrid_alpha`): a hybrid run's tuned metric against the weight α;
* ``gradient_norms`` (:mod:`.gradient_norms`): per-step gradient norms of runs trained with different negatives
  (ANCE paper, Fig. 8);
* ``epoch_curves`` (:mod:`.epoch_curves`): the mean training loss and dev MRR@100 of every epoch, of runs on
  differently scheduled batches (the Adaptive Batch Scheduling report, Figs. 3-5).

An experiment declares the figures of its own tables in its module (the ``figures`` of its
:class:`~hardneg.experiments.declaration.Experiment`), in the same form. ``rules/figures.smk`` makes one rule
``figure_<name>`` of each figure of both (:data:`hardneg.pipeline.figures.FIGURES`).

Every PNG is drawn on a :class:`matplotlib.figure.Figure` of its own (no pyplot state) by the Agg renderer and
saved without metadata that changes between runs, so the same data give the same bytes (:mod:`.plot`).
"""

from hardneg.figures import curves, epoch_curves, gradient_norms, hybrid_alpha, pairwise_errors, tsne
from hardneg.figures.declaration import Figure

# name → declaration (the figure targets are listed in this order)
FIGURES: dict[str, Figure] = {
    figure.name: figure
    for figure in (
        pairwise_errors.FIGURE,
        curves.TRAINING_CURVES,
        curves.ADORE_VS_ADORE_L,
        tsne.FIGURE,
        hybrid_alpha.FIGURE,
        gradient_norms.FIGURE,
        epoch_curves.FIGURE,
    )
}
