"""docs/interop.md shows the Pyserini recipe `hardneg export index adore_star --output exports/adore_star_faiss`
prints after `make run` (tests/workflow/test_documented_commands.py runs the page's commands there, and
tests/workflow/test_workflow_interop.py runs what the command prints on a tiny chain and compares the hits)."""

import json

from hardneg.dense.st_folder import resolve_model
from hardneg.export.index import ENCODER, auto_query_encoder, pyserini_recipe
from hardneg.pipeline.config import load_config_file
from hardneg.pipeline.plan import Plan
from tests.support import REPO
from tests.support.docs import shell_commands

PAGE = REPO / "docs" / "interop.md"
OUTPUT = "exports/adore_star_faiss"


def test_the_page_shows_the_recipe_the_export_of_the_default_config_prints(tmp_path):
    model = resolve_model(Plan(load_config_file(REPO / "config" / "config.yaml")).params("adore_star")["model"])
    # the hardneg.json of adore_star's model, from the settings the default config gives it (auto settled)
    (tmp_path / "hardneg.json").write_text(json.dumps({
        "pooling": model["pooling"], "normalize": model["normalize"], "projection_dim": model["projection_dim"],
        "markers": {} if model["markers"] else None}))
    info = {"pyserini_auto_query_encoder": auto_query_encoder(tmp_path),
            "query_max_length": model["query_max_length"], "encoder": ENCODER}
    printed = pyserini_recipe(OUTPUT, info)
    assert printed is not None  # the default model is one Pyserini's AutoQueryEncoder reads
    commands = [command for _, command in shell_commands(PAGE)]
    export = commands.index(f".venv/bin/hardneg export index adore_star --output {OUTPUT}")
    shown = [c for c in commands[export:] if "from pyserini.encode import AutoQueryEncoder" in c]
    assert len(shown) == 1
    first, body = shown[0].split("\n", 1)
    assert first == ".venv/bin/python - <<'PY'" and body == printed + "PY"


def test_no_recipe_for_a_model_pyserinis_encoders_do_not_read(tmp_path):
    (tmp_path / "hardneg.json").write_text(json.dumps({"pooling": "cls", "normalize": False, "projection_dim": 8,
                                                       "markers": None}))
    info = {"pyserini_auto_query_encoder": auto_query_encoder(tmp_path), "query_max_length": 32, "encoder": ENCODER}
    assert pyserini_recipe(OUTPUT, info) is None
