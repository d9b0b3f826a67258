"""The names a config gives to runs, datasets and splits (each becomes a file name), and how an error message
quotes a value of the config."""

# Names of runs, datasets and splits (the schema's $defs/name): a letter or digit, then letters, digits, '_', '.'
# and '-', never '..'. Such a name is one file name on every platform. Anchored with \A and \Z, not ^ and $: '$'
# also matches before a final newline, and JSON Schema's `pattern` is applied with re.search.
NAME_PATTERN = r"\A(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.-]*\Z"
NAME_RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit, without '..'"

QUOTE_LIMIT = 80  # characters of a value an error message shows

# A run repeated over seeds (its `seeds`): the run itself is the first seed's, `<run>_seed<s>` each other seed's
# (hardneg.pipeline.replicates), so that a folder under results/ tells whose replicate it is.
REPLICATE_SUFFIX = "_seed"


def replicate_name(run: str, seed: int) -> str:
    """The name of ``run``'s replicate trained with ``seed``."""
    return f"{run}{REPLICATE_SUFFIX}{seed}"


def seed_runs(run: str, entry: dict) -> list[str]:
    """``run`` and its replicates, one per seed of its config ``entry``'s ``seeds`` (the run itself first);
    ``[run]`` for a run without seeds."""
    return [run] + [replicate_name(run, seed) for seed in entry.get("seeds", [])[1:]]


def replicate_seed(name: str, run: str) -> int | None:
    """The seed of ``name`` when it is a replicate of ``run`` (``<run>_seed<s>``), None otherwise."""
    prefix = run + REPLICATE_SUFFIX
    tail = name[len(prefix) :]
    return int(tail) if name.startswith(prefix) and tail.isdigit() and tail == str(int(tail)) else None


def quoted(value, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` as an error message shows it: at most ``limit`` characters, a longer one cut in the middle
    with its length said (``'aaaa…zzzz' (5000 characters)``), so a huge value never floods the terminal."""
    text = repr(value)
    if len(text) <= limit:
        return text
    half = max(1, (limit - 1) // 2)
    return f"{text[:half]}…{text[-half:]} ({len(text)} characters)"
