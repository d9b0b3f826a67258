"""The ``verify`` command: check a run's hard negatives against their mining card, and mine them again; check an
imported list against the digests of its card."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from hardneg import methods
from hardneg.cli.common import add_results, say
from hardneg.errors import HardnegError
from hardneg.imports import CARD
from hardneg.io.layout import Layout

log = logging.getLogger(__name__)


def _scorer(card: dict):
    """The cross-encoder's ``score_pairs`` (its method's, in the method registry) when the card's pool was
    scored by one and the method declares it; else None (the stored scores are used, and the report says so)."""
    name = card["pool"].get("cross_encoder_method")
    if not card["pool"].get("cross_encoder") or not name:
        return None

    try:
        return getattr(methods.get(name), "score_pairs", None)
    except HardnegError:  # a method of a module this process has not loaded
        log.warning(
            "method %s of cross-encoder run %s is unknown to this process: its stored scores are used",
            name,
            card["pool"]["cross_encoder"],
        )
        return None


def _say_report(args, report: dict, text: str, path) -> int:
    if args.json:
        say(json.dumps({**report, "card": str(path)}, indent=2, sort_keys=True))
    else:
        say(text)
    return 0 if report["reproduced"] else 1


def _verify_import(args, card: dict, path, folder=None) -> int:
    """An imported list (its folder, or a run trained on it): its digests checked, nothing mined."""
    # numpy and pyarrow, with the import card: kept out of the command line's start
    from hardneg.imports.card import format_import_report, verify_import

    try:
        report = verify_import(card, results=args.results, folder=folder)
    except (KeyError, TypeError, AttributeError) as error:  # a card edited by hand
        raise HardnegError(
            f"{path}: could not check the imported list: the card's {error} is missing or not what "
            f"hardneg import writes; import the list again"
        ) from None
    return _say_report(args, report, format_import_report(report, card), path)


def _verify(args) -> int:
    # numpy and pyarrow, with the import card: kept out of the command line's start
    from hardneg.imports.card import is_import_card
    from hardneg.mining.card import read_card  # pyarrow: imported only when the command runs
    from hardneg.mining.verify import format_report, verify

    folder = Path(args.run)
    # an imported list's folder: a path (a run's name is one file name), or no run of that name
    if (folder / CARD).is_file() and ("/" in args.run or not (Path(args.results) / args.run).is_dir()):
        card = read_card(folder / CARD)
        if not is_import_card(card):
            raise HardnegError(f"{folder / CARD}: not the card of an imported list; verify a mining run by its name")
        return _verify_import(args, card, folder / CARD, folder)
    layout = Layout(args.results)
    if not Path(layout.run_dir(args.run)).is_dir():
        known = sorted(p.parent.name for p in Path(args.results).glob("*/hardnegs_card.json"))
        hint = f" (runs with a mining card: {', '.join(known)})" if known else ""
        raise HardnegError(f"run {args.run!r} has no results folder: {layout.run_dir(args.run)} does not exist{hint}")
    path = layout.hardnegs_card(args.run)
    if not Path(path).is_file() and not Path(layout.hard_negatives(args.run)).is_file():
        known = sorted(p.parent.name for p in Path(args.results).glob("*/hardnegs.parquet"))
        hint = f" (runs with one: {', '.join(known)})" if known else ""
        raise HardnegError(
            f"run {args.run!r} mined no hard negatives: {layout.hard_negatives(args.run)} does not "
            f"exist, so there is nothing to verify{hint}"
        )
    card = read_card(path)
    if is_import_card(card):
        return _verify_import(args, card, path)
    try:
        report = verify(
            card, results=args.results, remine_list=not args.inputs_only, score_pairs=_scorer(card), device=args.device
        )
    except (KeyError, TypeError, AttributeError) as error:  # a card edited by hand: a field missing or mistyped
        raise HardnegError(
            f"{path}: could not check run {args.run}: the mining card's {error} is missing or not "
            f"what hardneg writes; build the card again (snakemake --forcerun mining_card "
            f"{path})"
        ) from None
    except RuntimeError as error:  # Faiss on inputs that do not fit each other (a model and an index of others)
        raise HardnegError(f"could not check run {args.run} from {path}: {error}") from None
    return _say_report(args, report, format_report(report, card), path)


def register(sub) -> None:
    """The ``verify`` command."""
    parser = sub.add_parser(
        "verify",
        help="check a run's hard negatives against their mining card, and mine them again (an imported "
        "list: check its digests)",
        description="Read the run's mining card (RESULTS/<run>/hardnegs_card.json), name every input whose file "
        "changed since the list was mined, then mine the list again from the recorded inputs and "
        "parameters and report the per-query overlap with the stored list (and, for an approximate "
        "index, the drift of its negatives from an exact search's). Exit status 0: nothing changed "
        "and every query's negatives came back; 1: not reproduced; 2: could not check (an input "
        "unreadable, a card edited by hand, a bad argument). An imported list (hardneg import), given as "
        "its folder or as a run trained on it, is checked against the digests of its card only: the "
        "source file, the dataset's files and the list's; nothing is mined again.",
    )
    parser.add_argument("run", help="run name (its results are in RESULTS/<run>/), or the folder of an imported list")
    add_results(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--inputs-only",
        action="store_true",
        help="compare the recorded digests only, without mining again (no model is loaded)",
    )
    parser.add_argument(
        "--device",
        default=None,
        help="where the miner's model encodes the queries, e.g. cpu or cuda (default: the device "
        "the card records, e.g. auto)",
    )
    parser.set_defaults(func=_verify)
