"""The ``import`` command: hard negatives mined elsewhere, brought in as a hard-negative list of a dataset."""

from __future__ import annotations

from hardneg.cli.common import add_force, add_results, say
from hardneg.imports import FORMATS, TITLE_SEPARATOR


def _import(args) -> int:
    from hardneg.imports.lists import import_hardnegs  # pyarrow, datasets: imported only when the command runs

    written = import_hardnegs(
        args.source,
        args.format,
        args.output,
        dataset=args.dataset,
        split=args.split,
        results=args.results,
        title_separator=args.title_separator,
        force=args.force,
    )
    by = (
        f"matched by id and by text: {written['query_mentions_by_id']} and {written['query_mentions_by_text']} "
        f"query mentions, {written['document_mentions_by_id']} and {written['document_mentions_by_text']} "
        "document mentions"
    )
    say(
        f"wrote {written['output']}: {written['negatives']} hard negatives of {written['queries']} queries of split "
        f"{written['split']} of {written['dataset']}, from {written['rows']} rows ({written['format']}, "
        f"{written['shape']}); {by}"
    )
    if written["negatives_scored"]:
        say(
            f"teacher scores: {written['negatives_scored']} of {written['negatives']} negatives, "
            f"{written['positives_scored']} of {written['positives']} positives (the score columns of "
            f"hardnegs.parquet and positives.parquet)"
        )
    if written["negatives_judged_relevant"]:
        say(f"left out: {written['negatives_judged_relevant']} negatives the dataset judges relevant to their query")
    if written["positives_not_judged"]:
        say(
            f"note: {written['positives_not_judged']} positives of the file are not judged relevant by the dataset; "
            "training reads the dataset's judgements"
        )
    return 0


def register(sub) -> None:
    """The ``import`` command."""
    parser = sub.add_parser(
        "import",
        help="bring in hard negatives mined elsewhere as a hard-negative list of a dataset",
        description="Read a file of hard negatives (sentence-transformers, Tevatron, FlagEmbedding, or hardneg's own "
        "export), map its queries and documents to a prepared dataset's ids (by id where the file gives "
        "ids the dataset has, else by exact text), and write a hard-negative list folder "
        "(hardnegs.parquet, positives.parquet, hardnegs_card.json) that audits, verifies and trains "
        "like a mined list. Queries or documents that match nothing stop it with one error listing "
        "them.",
    )
    parser.add_argument(
        "source",
        help="the file or folder to import: JSON Lines, Parquet (*.parquet), or a "
        "datasets folder written by save_to_disk",
    )
    parser.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="sentence-transformers (triplet, n-tuple, labeled-pair or labeled-list, told from its "
        "columns), tevatron (v1 or v2 JSON Lines, told from its keys), flagembedding ({query, "
        "pos, neg} JSON Lines, with pos_scores and neg_scores), or hardneg's own hf-dataset or "
        "jsonl export",
    )
    parser.add_argument(
        "--dataset", required=True, help="the prepared dataset (RESULTS/datasets/DATASET) whose ids the list uses"
    )
    parser.add_argument(
        "--split", default="train", help="the split whose queries the file's queries are (default: train)"
    )
    parser.add_argument("--output", required=True, help="the folder to write")
    parser.add_argument(
        "--title-separator",
        default=None,
        metavar="TEXT",
        help="what joins a document's title and text in a format of one string per document, "
        f"besides a space (default: {TITLE_SEPARATOR}, as hardneg's sentence-transformers "
        "export joins them for BERT-style tokenizers)",
    )
    add_results(parser)
    add_force(parser, "a folder holding an earlier import")
    parser.set_defaults(func=_import)
