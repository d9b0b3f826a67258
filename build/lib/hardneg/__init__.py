"""hardneg: a reproducible pipeline for training dense retrievers with hard negatives."""

__version__ = "0.1.0"
