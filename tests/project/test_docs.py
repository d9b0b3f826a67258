"""The documentation site: `mkdocs build --strict` builds it offline (no broken link, no page outside the nav, no
docstring mkdocstrings cannot read), the configuration reference is generated into it, every file a page cites
exists, and every config fragment a page shows is one the configuration check accepts."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.docs import name, pages, yaml_blocks

BIN = Path(sys.executable).parent
TOP = ("src", "tests", "benchmarks", "rules", "scripts", "config", "profiles", "workflow", "docs")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                            capture_output=True, text=True, env={"PATH": f"{BIN}:/usr/bin:/bin",
                                                                 "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-5000:]
    return out


def test_make_docs_builds_the_site_strictly():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^docs: setup\n\t.*\$\(BIN\)/mkdocs build --strict", makefile, flags=re.M)


def test_the_site_builds_strictly_with_every_page_and_the_reference(site):
    for page in (page for page in pages() if page.is_relative_to(REPO / "docs")):
        built = site / page.relative_to(REPO / "docs").with_suffix("")
        assert (built / "index.html").is_file() or (site / "index.html").is_file() and page.stem == "index", page
    reference = (site / "reference" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "evaluation.measures" in reference and "runs.&lt;run&gt;.params" in reference
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "mine_hard_negatives" in api and "audit_hard_negatives" in api


def _cited_paths(text: str) -> set[str]:
    """Repository paths a page writes in code spans (``src/hardneg/...``, ``tests/...``): whole words; placeholders
    such as <run>, and what benchmarks write (benchmarks/out/), left out."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.rstrip(".,;:)")
            if (word.split("/", 1)[0] in TOP and "/" in word and not word.startswith("benchmarks/out/")
                    and not re.search(r"[<>*{}…]|\.\.\.", word)):
                found.add(word.split("::", 1)[0])
    return found


def test_every_file_a_page_cites_exists():
    missing = [f"{name(page)}: {path}" for page in pages() for path in sorted(_cited_paths(page.read_text()))
               if not (REPO / path).exists()]
    assert not missing, "\n".join(missing)


def test_cited_paths_are_found_and_placeholders_left_out():
    text = "see `src/hardneg/fusion.py`, `results/<run>/model` and `tests/unit/io/test_x.py::test_y`."
    assert _cited_paths(text) == {"src/hardneg/fusion.py", "tests/unit/io/test_x.py"}


def _run_fragments():
    """(page, section, fragment) of every yaml block that is part of a config: top-level keys of the schema."""
    from hardneg.pipeline.config import load_schema

    keys = set(load_schema()["properties"])
    for page in pages():
        for section, value in yaml_blocks(page):
            if isinstance(value, dict) and set(value) <= keys:
                yield page, section, value


def test_every_config_fragment_a_page_shows_is_accepted():
    """A fragment is merged into the default config (its runs, datasets and policies added or replaced, other sections
    replaced) and the whole is validated; a fragment's runs may name the runs of the default config as inputs."""
    import copy

    import yaml

    from hardneg.pipeline.config import validate_config

    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    checked = 0
    for page, section, fragment in _run_fragments():
        config = copy.deepcopy(default)
        for key, value in fragment.items():
            if key in ("runs", "datasets", "downloads", "policies"):
                config.setdefault(key, {}).update(value)
            elif key == "resources":
                continue  # a full-scale config's rule resources, checked with that config by its own tests
            else:
                config[key] = value
        if "dataset" in fragment or "datasets" in fragment:
            config["targets"] = None
            config["runs"] = {run: spec for run, spec in config["runs"].items() if run in fragment.get("runs", {})}
            config["runs"] = config["runs"] or {"bm25": {"method": "bm25"}}
            config.pop("summary", None), config.pop("figures", None), config.pop("pq_matrix", None)
            config.pop("compare", None)  # like the summary and figures, it names runs of the default config
            config.pop("false_negatives", None)  # an experiment on the default data, like pq_matrix
        try:
            validate_config(config)
        except Exception as error:  # noqa: BLE001 - the message names the page
            pytest.fail(f"{name(page)} [{section}]: {error}")
        checked += 1
    assert checked >= 5


COMMAND = re.compile(r"`(?:\.venv/bin/)?(?:python|nice -n \d+ python|snakemake|hardneg|make|pytest|time make)\b[^`]*`")
SOURCE = re.compile(r"\b(paper|papers|Table \d|Fig\. \d|README|report|reports|config header|from the config)\b")


def _tables_without_source(text: str) -> list[str]:
    """The first row of each Markdown table holding a measured number (a decimal, or a figure with a unit) whose
    section, up to the table, names neither a command that regenerates it nor the published source it quotes."""
    missing = []
    for section in re.split(r"^#{1,6} .*$", text, flags=re.M):
        lines = section.splitlines()
        for at, line in enumerate(lines):
            starts = line.startswith("|") and (at == 0 or not lines[at - 1].startswith("|"))
            if not starts:
                continue
            table = []
            for row in lines[at:]:
                if not row.startswith("|"):
                    break
                table.append(row)
            numbers = re.search(r"\|[^|`]*(?<![§\w.])\d+\.\d+|\b\d[\d,.]*\s?(?:s|ms|MiB|GB|docs/s|×)\b", "\n".join(table[2:]))
            before = "\n".join(lines[:at])
            if numbers and not (COMMAND.search(before) or SOURCE.search(before)):
                missing.append(line)
    return missing


def test_every_table_of_numbers_names_the_command_that_regenerates_it():
    missing = [f"{name(page)}: {row}" for page in pages() for row in _tables_without_source(page.read_text())]
    assert not missing, "\n".join(missing)


def test_a_table_of_numbers_without_its_command_is_found():
    table = "| run | MRR@10 |\n|---|---|\n| bm25 | 0.272 |\n"
    assert _tables_without_source(f"## Results\n\nOn the test split:\n\n{table}") == ["| run | MRR@10 |"]
    assert _tables_without_source(f"## Results\n\n`python benchmarks/synthetic_results.py` prints:\n\n{table}") == []
    assert _tables_without_source("## Keys\n\n| key | what |\n|---|---|\n| `k1` | BM25's k1 |\n") == []


def test_the_api_pages_artifact_table_is_the_declared_schemas():
    """docs/api.md's table of artifact kinds lists each kind's columns and Arrow types as hardneg.io.artifacts
    declares them (float32 is Arrow's ``float``)."""
    from hardneg.io import artifacts

    rows = [line for line in (REPO / "docs" / "api.md").read_text().splitlines() if re.match(r"\| `[A-Z_]+` \|", line)]
    assert len(rows) >= 8
    for row in rows:
        kind, columns = [cell.strip() for cell in row.strip("|").split("|")][:2]
        schema = getattr(artifacts, kind.strip("`")).schema
        shown = [tuple(column.strip().split(" ", 1)) for column in columns.split(",")]
        declared = [(f"`{field.name}`", {"float": "float32", "double": "float64"}.get(str(field.type), str(field.type)))
                    for field in schema]
        assert shown == declared, kind


def _api_functions():
    """The functions docs/api.md renders (``::: module.function``), imported."""
    import importlib
    import inspect

    for target in re.findall(r"^::: ([\w.]+)", (REPO / "docs" / "api.md").read_text(), flags=re.M):
        module, _, attribute = target.rpartition(".")
        value = getattr(importlib.import_module(module), attribute)
        if inspect.isfunction(value):
            yield target, value


def _undocumented(function) -> list[str]:
    """What a function's docstring leaves out: a ``:param x:`` per parameter, ``:returns:`` unless it returns
    None."""
    import inspect

    doc = inspect.getdoc(function) or ""
    signature = inspect.signature(function)
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    missing = [f":param {name}:" for name, parameter in signature.parameters.items()
               if f":param {name}:" not in doc and f":param {stars.get(parameter.kind, '')}{name}:" not in doc]
    if signature.return_annotation not in (None, "None", inspect.Signature.empty) and ":returns:" not in doc:
        missing.append(":returns:")
    return missing


def test_every_function_of_the_api_page_documents_its_inputs_and_output():
    functions = dict(_api_functions())
    assert len(functions) >= 40 and "hardneg.mining.negatives.mine_hard_negatives" in functions
    missing = {target: gaps for target, function in functions.items() if (gaps := _undocumented(function))}
    assert not missing, missing


def test_an_undocumented_parameter_is_found():
    def scores(run, depth: int = 10) -> float:
        """The scores.

        :param run: a RANKING table.
        """
    assert _undocumented(scores) == [":param depth:", ":returns:"]


def architecture_tree() -> dict[str, str]:
    """The architecture page's tree: each top-level entry of src/hardneg/ (``name/`` or ``name.py``) with its text."""
    block = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("```")[1]
    entries, current = {}, None
    for line in block.splitlines():
        entry = re.match(r"^  (\w+(?:/|\.py))\s", line)
        if entry:
            current = entry.group(1)
            entries[current] = line
        elif re.match(r"^\S", line):
            current = None
        elif current:
            entries[current] += " " + line
    return entries


def test_the_architecture_tree_names_every_package_and_no_missing_module():
    package = REPO / "src" / "hardneg"
    tree = architecture_tree()
    top = {f"{path.name}/" for path in package.iterdir() if (path / "__init__.py").is_file()}
    top |= {path.name for path in package.glob("*.py") if path.name != "__init__.py"}
    assert set(tree) == top
    stale = [f"{entry}{name}.py" for entry, text in tree.items() if entry.endswith("/")
             for name in sorted(set(re.findall(r"(\w+)\.py", text)))
             if not any((package / entry).rglob(f"{name}.py"))]
    assert stale == []


def test_the_module_map_lists_every_module_and_refuses_one_without_a_docstring(tmp_path):
    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        import module_map
    finally:
        sys.path.remove(str(REPO / "docs" / "hooks"))
    page = module_map.module_map()
    listed = set(re.findall(r"^\| `(hardneg[\w.]*)` \|", page, flags=re.M))
    assert "hardneg.mining.verify" in listed and "hardneg.imports.matching" in listed
    assert len(listed) == len(list((REPO / "src" / "hardneg").rglob("*.py"))) - 1  # hardneg/__init__.py: the root
    bare = tmp_path / "hardneg" / "io" / "bare.py"
    bare.parent.mkdir(parents=True)
    bare.write_text("X = 1\n")
    with pytest.raises(ValueError, match="io/bare.py: the module has no docstring"):
        module_map.modules(tmp_path / "hardneg")
