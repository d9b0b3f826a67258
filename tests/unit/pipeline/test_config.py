"""Config validation: defaults are filled, and every mistake names its key."""

import copy

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.pipeline.config import load_config_file, validate_config
from hardneg.pipeline.resolution import resolve_run
from hardneg.schema.files import config_hash
from tests.support import REPO


@pytest.fixture(scope="module")
def parsed_default_config():
    """config/config.yaml parsed once for the module (libyaml's parser): most tests here change one key of it."""
    with open(REPO / "config" / "config.yaml") as handle:
        return yaml.load(handle, Loader=yaml.CSafeLoader)


@pytest.fixture
def default_config(parsed_default_config):
    return copy.deepcopy(parsed_default_config)


def test_default_config_is_valid_and_defaults_are_filled(default_config):
    config = validate_config(default_config)
    assert config["datasets"]["synthetic"]["subtopics_per_cluster"] == 10  # schema default
    assert config["runs"]["bm25"]["params"]["title_weight"] == 1.0
    resolved = resolve_run(config, "bm25")
    assert resolved["dataset"]["name"] == "synthetic" and resolved["dataset"]["seed"] == 42
    assert resolved["evaluation"]["split"] == "test"


def test_config_hash_is_stable_and_sensitive(default_config):
    config = validate_config(default_config)
    first = config_hash(resolve_run(config, "bm25"))
    assert first == config_hash(resolve_run(validate_config(copy.deepcopy(default_config)), "bm25"))
    config["runs"]["bm25"]["params"]["k1"] = 1.2
    assert config_hash(resolve_run(config, "bm25")) != first


def _mutate(config, path, value):
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config


_DELETE = object()


@pytest.mark.parametrize("path, value, key, message", [
    (["sed"], 1, "sed", "unknown key; allowed keys: compare, dataset, datasets, downloads, duplicates, evaluation, false_negatives, figures, method_modules, policies, pq_matrix, report, resources, results, runs, seed, summary, tables, targets, viewer"),
    (["runs", "bm25", "params", "k11"], 1.0, "runs.bm25.params.k11", "unknown key; allowed keys: b, fields"),
    (["runs", "bm25", "params", "k1"], "high", "runs.bm25.params.k1", "expected number, got 'high'"),
    (["runs", "bm25", "params", "top_k"], 0, "runs.bm25.params.top_k", "0 is less than the minimum of 1"),
    (["runs", "bm25", "method"], "bm52", "runs.bm25.method", "must be one of abs, adore, ance, bm25, colbert, condenser, crossencoder, hybrid, inbatch, randneg, rrf, star, static_hn, tct, warmup, zeroshot; got 'bm52'"),
    (["runs", "bm25", "params", "fields"], "title", "runs.bm25.params.fields", "must be one of flat, multifield"),
    (["datasets", "synthetic", "adapter"], "csv", "datasets.synthetic.adapter", "must be one of synthetic, beir"),
    (["datasets", "synthetic", "num_docs"], "5k", "datasets.synthetic.num_docs", "expected integer, got '5k'"),
    (["datasets", "synthetic", "synonym_rate"], 1.5, "datasets.synthetic.synonym_rate", "greater than the maximum"),
    (["datasets", "synthetic", "num_doc"], 10, "datasets.synthetic.num_doc", "unknown key"),
    (["datasets", "sf"], {"adapter": "beir", "splits": ["test"]}, "datasets.sf.path", "required key is missing"),
    (["runs", "datasets"], {"method": "bm25"}, "runs.datasets", "'datasets' is reserved"),
    (["runs", "bm25", "dataset"], "scifact", "runs.bm25.dataset", "no dataset named 'scifact'"),
    (["dataset"], "msmarco", "dataset", "no dataset named 'msmarco'"),
    (["evaluation", "split"], "validation", "evaluation.split", "has no split 'validation'"),
    (["runs"], _DELETE, "runs", "required key is missing"),
    (["runs", "star", "inputs", "init"], "bm25", "runs.star.inputs.init", "is a bm25 run, which has no model"),
    (["runs", "star", "inputs", "negatives"], "bm25", "runs.star.inputs.negatives", "needs a dense run"),
    (["runs", "warmup", "inputs", "negatives"], "nowhere", "runs.warmup.inputs.negatives", "no run named 'nowhere'"),
    (["runs", "warmup", "inputs"], {}, "runs.warmup.inputs.negatives", "required key is missing"),
    (["runs", "star", "params", "train", "optimizer"], "sgd", "runs.star.params.train.optimizer",
     "must be one of adamw, lamb"),
    (["runs", "warmup", "params", "negatives", "per_query"], -1, "runs.warmup.params.negatives.per_query",
     "-1 is less than the minimum of 0"),
    (["runs", "warmup", "params", "modle"], {}, "runs.warmup.params.modle", "unknown key; allowed keys: encode, index, model, negatives, search, train"),
    # a method's own parameters belong to that method only
    (["runs", "warmup", "params", "mining"], {}, "runs.warmup.params.mining", "unknown key"),
    (["runs", "star", "params", "adore"], {}, "runs.star.params.adore", "unknown key"),
    (["runs", "star", "params", "mining", "dept"], 5, "runs.star.params.mining.dept", "unknown key"),
    (["runs", "adore_star", "inputs"], {}, "runs.adore_star.inputs.docs", "required key is missing"),
    (["runs", "adore_star", "inputs", "init"], "warmup", "runs.adore_star.inputs.init", "unknown key"),
    (["runs", "adore_star", "inputs", "docs"], "bm25", "runs.adore_star.inputs.docs", "needs a dense run"),
    (["runs", "tct", "inputs", "teacher"], "bm25", "runs.tct.inputs.teacher", "which has no model"),
    (["runs", "tct_hn", "inputs", "negatives"], "bm25", "runs.tct_hn.inputs.hard_negatives",
     "a tct run takes only one of inputs.negatives and inputs.hard_negatives"),
    (["runs", "colbert_teacher", "inputs", "candidates"], _DELETE, "runs.colbert_teacher.inputs.candidates",
     "required key is missing"),
    (["runs", "colbert_teacher", "params", "train", "dev_every"], 5, "runs.colbert_teacher.params.train.dev_every",
     "a re-ranking run is evaluated by its metrics.json"),
    (["targets"], ["star", "nothing"], "targets.1", "no run named 'nothing'"),
    (["evaluation", "extra_splits"], ["dev", "val"], "evaluation.extra_splits", "has no split 'val'"),
    (["method_modules"], ["no/such/method.py"], "method_modules.0", "no such file"),
    (["method_modules"], ["hardneg_no_such_module"], "method_modules.0", "cannot import 'hardneg_no_such_module'"),
    (["method_modules"], "toy.py", "method_modules", "expected a list"),
    # fusion runs: the hybrid fuses exactly a sparse and a dense run, rrf two or more, each an existing run; α is
    # never tuned on an evaluated split
    (["runs", "hybrid_adore_star", "inputs", "runs"], ["bm25"], "runs.hybrid_adore_star.inputs.runs",
     "expected exactly 2 entries (two runs: the sparse one first"),
    (["runs", "hybrid_adore_star", "inputs", "runs"], ["bm25", "star", "adore_star"],
     "runs.hybrid_adore_star.inputs.runs", "expected exactly 2 entries"),
    (["runs", "rrf_adore_star", "inputs", "runs"], ["bm25"], "runs.rrf_adore_star.inputs.runs",
     "expected at least 2 entries"),
    (["runs", "hybrid_adore_star", "inputs", "runs"], ["bm25", "nowhere"], "runs.hybrid_adore_star.inputs.runs",
     "no run named 'nowhere'"),
    (["runs", "hybrid_adore_star", "inputs", "runs"], ["bm25", "hybrid_adore_star"],
     "runs.hybrid_adore_star.inputs.runs", "a run cannot be its own input"),
    (["runs", "hybrid_adore_star", "params"], {"tune": {"split": "test"}}, "runs.hybrid_adore_star.params.tune.split",
     "split 'test' is evaluated"),
    (["runs", "hybrid_adore_star", "params"], {"tune": {"split": "validation"}},
     "runs.hybrid_adore_star.params.tune.split", "has no split 'validation'"),
    (["runs", "hybrid_adore_star", "params"], {"tune": {"measure": "Recall10"}},
     "runs.hybrid_adore_star.params.tune.measure", "is not an ir-measures measure"),
    (["runs", "hybrid_adore_star", "params"], {"alpha": -1}, "runs.hybrid_adore_star.params.alpha",
     "less than the minimum of 0"),
    (["runs", "rrf_adore_star", "params"], {"alpha": 0.1}, "runs.rrf_adore_star.params.alpha", "unknown key"),
    # what only a method knows: adaptive batches are scored with BM25; Condenser needs an early and a late layer
    (["runs", "abs_encode", "inputs"], {}, "runs.abs_encode.inputs.bm25", "name a BM25 run"),
    (["runs", "abs_random", "params", "abs", "order"], "sorted", "runs.abs_random.params.abs.order",
     "must be one of sequential, random, adaptive"),
    (["runs", "condenser", "params", "model", "builtin", "num_hidden_layers"], 1,
     "runs.condenser.params.model.builtin.num_hidden_layers", "it needs at least 2"),
    (["runs", "condenser", "params", "condenser", "early_layers"], 2, "runs.condenser.params.condenser.early_layers",
     "leaves no late layer"),
    (["runs", "condenser", "params", "condenser", "span_min"], 0.6, "runs.condenser.params.condenser.span_min",
     "is above span_max"),
])
def test_config_errors_name_the_key(default_config, path, value, key, message):
    config = _mutate(default_config, path, value)
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == key
    assert message in info.value.message
    assert str(info.value).startswith(f"config key '{key}': ")


def test_alpha_is_never_tuned_on_an_extra_evaluated_split_and_a_fixed_alpha_tunes_nothing(default_config):
    default_config["evaluation"]["extra_splits"] = ["dev"]
    default_config["runs"]["hybrid_adore_star"]["params"] = {"tune": {"split": "dev"}}
    with pytest.raises(ConfigError, match="'runs.hybrid_adore_star.params.tune.split': split 'dev' is evaluated"):
        validate_config(copy.deepcopy(default_config))
    default_config["runs"]["hybrid_adore_star"]["params"] = {"alpha": 0.05, "tune": {"split": "dev"}}
    config = validate_config(default_config)  # a fixed alpha: tune is not read
    assert config["runs"]["hybrid_adore_star"]["params"]["alpha"] == 0.05


def test_cycles_between_runs_are_rejected(default_config):
    default_config["runs"]["warmup"]["inputs"] = {"negatives": "star"}
    with pytest.raises(ConfigError, match="cycle: (warmup -> star -> warmup|star -> warmup -> star)"):
        validate_config(default_config)


def test_unknown_measure_is_a_config_error():
    from hardneg.evaluation.metrics import parse_measures

    with pytest.raises(ConfigError, match=r"config key 'evaluation.measures': 'MRR@ten'"):
        parse_measures(["nDCG@10", "MRR@ten"])


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("seed: 1\nruns:\n  bm25: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml, line 4: invalid YAML"):
        load_config_file(path)


# ------------------------------------------------------------------------------------------ safe names
_NAME_RULE = "a name becomes a file name, so it may hold only letters, digits, '_', '.' and '-'"


@pytest.mark.parametrize("path, value, key", [
    (["datasets", "synthetic", "num_queries"], {"train": 20, "test": 5, "dev": 5, "../../../../tmp/x": 5},
     "datasets.synthetic.num_queries.../../../../tmp/x"),
    (["datasets", "../x"], {"adapter": "synthetic"}, "datasets.../x"),
    (["datasets", "sf"], {"adapter": "beir", "path": "sf", "splits": ["test", "a/b"]}, "datasets.sf.splits.1"),
    (["datasets", "ms"], {"adapter": "msmarco_passage", "collection": "c", "queries": {"dev set": "q"},
                          "qrels": {"dev set": "r"}}, "datasets.ms.queries.dev set"),
    (["datasets", "dl"], {"adapter": "trec", "corpus": "c", "topics": {"test": "t"}, "qrels": {"test": "q",
                                                                                              "x/y": "q"}},
     "datasets.dl.qrels.x/y"),
    (["datasets", "ir"], {"adapter": "ir_datasets", "splits": {"..": "beir/scifact/test"}}, "datasets.ir.splits..."),
    (["runs", "../../out"], {"method": "bm25"}, "runs.../../out"),
    (["runs", "a..b"], {"method": "bm25"}, "runs.a..b"),
    (["evaluation", "split"], "../test", "evaluation.split"),
    (["evaluation", "extra_splits"], ["dev", "/tmp/dev"], "evaluation.extra_splits.1"),
    (["runs", "star", "params", "train", "split"], "tr ain", "runs.star.params.train.split"),
    (["runs", "star", "params", "train", "dev_split"], "..", "runs.star.params.train.dev_split"),
    # '$' would match before a final newline: the name 'tiny\n' would make results/datasets/tiny\n/
    (["runs", "bm25\n"], {"method": "bm25"}, "runs.bm25\n"),
    (["datasets", "tiny\n"], {"adapter": "synthetic"}, "datasets.tiny\n"),
    (["datasets", "synthetic", "num_queries"], {"train": 20, "test": 5, "dev\n": 5},
     "datasets.synthetic.num_queries.dev\n"),
    (["evaluation", "split"], "test\n", "evaluation.split"),
    (["evaluation", "extra_splits"], ["dev\n"], "evaluation.extra_splits.0"),
    (["runs", "star", "params", "train", "split"], "train\n", "runs.star.params.train.split"),
    (["summary"], {"runs": ["bm25\n"]}, "summary.runs.0"),
])
def test_unsafe_names_are_config_errors(default_config, path, value, key):
    config = _mutate(default_config, path, value)
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == key
    assert _NAME_RULE in info.value.message


def test_name_pattern_is_the_schema_and_layout_one():
    from hardneg.io.layout import NAME_PATTERN
    from hardneg.pipeline.config import load_schema

    assert load_schema()["$defs"]["name"]["pattern"] == NAME_PATTERN


def test_layout_paths_stay_in_the_results_folder(tmp_path):
    from hardneg.errors import OutputPathError
    from hardneg.io.layout import Layout

    layout = Layout(str(tmp_path / "results"))
    assert layout.queries("d", "{split}") == f"{tmp_path}/results/datasets/d/queries/{{split}}.parquet"
    assert layout.ranking("{run}", "test", "{index}").endswith("results/{run}/by_index/{index}/rankings/test.parquet")
    with pytest.raises(OutputPathError, match=r"^split name '../../../../tmp/x' cannot be used in a path under "):
        layout.queries("d", "../../../../tmp/x")
    for call in (lambda: layout.run_dir(".."), lambda: layout.config("a/b"), lambda: layout.dataset_dir("."),
                 lambda: layout.index("r", "../../x"), lambda: layout.ranking("r", "test", "..")):
        with pytest.raises(OutputPathError, match="name .* cannot be used in a path"):
            call()
    with pytest.raises(OutputPathError, match=r"output path '.*' is outside the folder"):
        layout.experiment("pq_matrix", "../../../x.md")


# ------------------------------------------------------------------------------ a split without qrels
def test_a_split_without_qrels_is_a_config_error(default_config):
    default_config["datasets"]["dl"] = {"adapter": "trec", "corpus": "docs.jsonl",
                                        "topics": {"train": "t.tsv", "test": "t.tsv"}, "qrels": {"train": "q.txt"}}
    with pytest.raises(ConfigError) as info:
        validate_config(default_config)
    assert str(info.value) == ("config key 'datasets.dl.qrels.test': required key is missing: split 'test' has "
                               "topics (datasets.dl.topics.test) but no qrels file; every split needs its qrels")


# ---------------------------------------------------------------------------------- faiss settings
_STAR_INDEX = ["runs", "star", "params", "index", "factory"]


@pytest.mark.parametrize("edits, key, message", [
    ([(_STAR_INDEX, "Flatt")], "runs.star.params.index.factory",
     "'Flatt' is not a Faiss index factory string (e.g. Flat, PQ32, OPQ32,PQ32, IVF1024,PQ32, IVF1024,Flat, HNSW32)"),
    ([(_STAR_INDEX, "PQ7")], "runs.star.params.index.factory",
     "PQ7 needs a dimension divisible by 7; the model's embeddings have 256"),
    ([(_STAR_INDEX, "OPQ7,PQ7")], "runs.star.params.index.factory",
     "PQ7 needs a dimension divisible by 7; the model's embeddings have 256"),
    ([(_STAR_INDEX, "IVF8192,Flat")], "runs.star.params.index.factory",
     "'IVF8192,Flat' needs at least 8192 training vectors (one per inverted list of IVF8192); the corpus has 5000 "
     "documents"),
    # pq_matrix's factories come first, under their own key (its runs index star's documents too)
    ([(["runs", "star", "params", "index", "train_size"], 100)], "pq_matrix.indexes.1",
     "'PQ32' needs at least 256 training vectors (one per centroid of its 8-bit product quantizer); "
     "index.train_size is 100"),
    ([(["runs", "adore_star", "params", "adore", "index"], "PQ5")], "runs.adore_star.params.adore.index",
     "PQ5 needs a dimension divisible by 5; the model's embeddings have 256"),
    ([(["pq_matrix", "indexes"], ["Flat", "PQ32", "PQ7"])], "pq_matrix.indexes.2",
     "PQ7 needs a dimension divisible by 7; the model's embeddings have 256"),
    # star continues warmup's model, so its documents have warmup's projection_dim
    ([(["runs", "warmup", "params", "model", "projection_dim"], 48)], "pq_matrix.indexes.1",
     "PQ32 needs a dimension divisible by 32; the model's embeddings have 48"),
    ([(["runs", "randneg", "params", "model", "builtin", "hidden_size"], 36),
      (["runs", "randneg", "params", "index", "factory"], "PQ32")], "runs.randneg.params.index.factory",
     "PQ32 needs a dimension divisible by 32; the model's embeddings have 36"),
])
def test_faiss_settings_are_checked_at_config_time(default_config, edits, key, message):
    for path, value in edits:
        node = default_config
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    with pytest.raises(ConfigError) as info:
        validate_config(default_config)
    assert info.value.key == key
    assert info.value.message == message


def test_model_dimension_from_a_local_folder_or_unknown(default_config, tmp_path):
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "hidden_size": 40}')
    runs = default_config["runs"]
    runs["zs"] = {"method": "zeroshot", "params": {"model": {"name": str(folder)}, "index": {"factory": "PQ16"}}}
    with pytest.raises(ConfigError, match=r"^config key 'runs\.zs\.params\.index\.factory': PQ16 needs a dimension "
                                          r"divisible by 16; the model's embeddings have 40$"):
        validate_config(copy.deepcopy(default_config))
    runs["zs"]["params"]["model"]["name"] = "no-such-org/no-such-model-offline"  # unknown dimension: parse only
    validate_config(copy.deepcopy(default_config))
    runs["zs"]["params"]["index"]["factory"] = "Flatt"
    with pytest.raises(ConfigError, match=r"'Flatt' is not a Faiss index factory string"):
        validate_config(copy.deepcopy(default_config))


def test_build_job_errors_name_the_config_key(default_config):
    from hardneg.pipeline.index_factories import factory_key

    config = validate_config(default_config)
    assert factory_key(config, "star", "Flat") == "pq_matrix.indexes.0"
    assert factory_key(config, "star", "PQ16") == "pq_matrix.indexes.2"
    assert factory_key(config, "warmup", "Flat") == "runs.warmup.params.index.factory"
    assert factory_key(config, "nowhere", "HNSW32") == "runs.nowhere.params.index.factory"


# ------------------------------------------------------------------------------------------ YAML files
@pytest.mark.parametrize("text, message", [
    ("seed: 1\nruns:\n  bm25: [unclosed\n", "bad.yaml, line 4: invalid YAML: expected ',' or ']'"),
    ("seed: 1\n  runs: {}\n", "bad.yaml, line 2: invalid YAML: mapping values are not allowed here"),
    ("seed: 1\nruns: {}\nseed: 2\n", "bad.yaml, line 3: invalid YAML: duplicate key 'seed' (first on line 1)"),
    ("- a\n- b\n", "bad.yaml: a config must be a mapping of keys, got a list"),
    ("just text\n", "bad.yaml: a config must be a mapping of keys, got a str"),
])
def test_yaml_errors_name_file_and_line(tmp_path, text, message):
    from hardneg.errors import DataError
    from hardneg.schema.files import read_config_yaml

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    for read in (read_config_yaml, load_config_file):
        with pytest.raises(ConfigError) as info:
            read(path)
        assert str(info.value).startswith(f"{tmp_path}/{message}")
        assert isinstance(info.value, DataError)


def test_read_config_yaml_reads_mappings_and_anchors(tmp_path):
    from hardneg.schema.files import read_config_yaml

    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {k1: 0.9, b: 0.4}\nruns:\n  x:\n    <<: *b\n    k1: 1.2\n")
    assert read_config_yaml(path) == {"base": {"k1": 0.9, "b": 0.4}, "runs": {"x": {"k1": 1.2, "b": 0.4}}}
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    assert read_config_yaml(tmp_path / "empty.yaml") == {}
    with pytest.raises(ConfigError, match=r"missing\.yaml: no such config file"):
        read_config_yaml(tmp_path / "missing.yaml")


def test_config_files_are_merged_in_order_with_overrides_on_top(tmp_path):
    from hardneg.pipeline.config import load_config_files, read_config_files

    (tmp_path / "a.yaml").write_text("seed: 1\nevaluation: {split: test, measures: [RR@10]}\n")
    (tmp_path / "b.yaml").write_text("seed: 2\nevaluation: {split: dev}\n")
    merged = read_config_files([tmp_path / "a.yaml", tmp_path / "b.yaml"], {"seed": 3})
    assert merged == {"seed": 3, "evaluation": {"split": "dev", "measures": ["RR@10"]}}
    assert read_config_files(str(tmp_path / "a.yaml"))["seed"] == 1
    (tmp_path / "c.yaml").write_text("seed: 1\nseed: 2\n")  # a strict read of every file, the last one too
    with pytest.raises(ConfigError, match=r"c\.yaml, line 2: invalid YAML: duplicate key 'seed'"):
        read_config_files([tmp_path / "a.yaml", tmp_path / "c.yaml"], {"seed": 3})
    with pytest.raises(ConfigError, match=r"c\.yaml, line 2: invalid YAML: duplicate key 'seed'"):
        load_config_files([tmp_path / "a.yaml", tmp_path / "c.yaml"])


# ------------------------------------------------------------------------------------------ targets
@pytest.mark.parametrize("target, message", [
    ("nosuchrun", "no run named 'nosuchrun' (a target is a run name or a path under results/)"),
    ("bm25\n", "no run named 'bm25\\n' (a target is a run name or a path under results/)"),
    ("/etc/passwd", "'/etc/passwd' is an absolute path; a target is a run name or a path under results/, relative "
                    "to the working folder (e.g. results/<run>/metrics.json)"),
    ("/work/results/bm25/metrics.json", "'/work/results/bm25/metrics.json' is an absolute path"),
    ("results/", "'results/' is not a path under results/ (this config's `results`); a target is a run name or "
                 "a path under results/ (e.g. results/<run>/metrics.json)"),
    ("results/.", "'results/.' is not a path under results/"),
    ("./results", "'./results' is not a path under results/"),
    ("results/../config/config.yaml", "'results/../config/config.yaml' is not a path under results/"),
    ("results/bm25/../../../x", "'results/bm25/../../../x' is not a path under results/"),
    ("config/config.yaml", "'config/config.yaml' is not a path under results/"),
    ("results2/bm25/metrics.json", "'results2/bm25/metrics.json' is not a path under results/"),
    ("results/bm25/metrics.json\n", "'results/bm25/metrics.json\\n' holds a space or a control character; no "
                                    "output of the workflow does"),
    ("results/bm 25/metrics.json", "'results/bm 25/metrics.json' holds a space or a control character"),
])
def test_a_target_is_a_run_or_a_path_under_results(default_config, target, message):
    default_config["targets"] = ["bm25", target]
    with pytest.raises(ConfigError) as info:
        validate_config(default_config)
    assert info.value.key == "targets.1"
    assert info.value.message.startswith(message)


def test_targets_under_results_are_kept_in_their_normal_form(default_config):
    default_config["targets"] = ["bm25", "results/summary.md", "./results/star/metrics.json",
                                 "results//pq_matrix/./matrix.md", "results/star/../warmup/metrics.json"]
    assert validate_config(default_config)["targets"] == [
        "bm25", "results/summary.md", "results/star/metrics.json", "results/pq_matrix/matrix.md",
        "results/warmup/metrics.json"]


@pytest.mark.parametrize("path, value, key", [
    (["targets"], ["x" * 100_000], "targets.0"),
    (["dataset"], "x" * 100_000, "dataset"),
    (["runs", "bm25", "dataset"], "x" * 100_000, "runs.bm25.dataset"),
    (["runs", "warmup", "inputs", "negatives"], "x" * 100_000, "runs.warmup.inputs.negatives"),
    (["method_modules"], {"x" * 100_000: 1}, "method_modules"),
])
def test_a_long_value_is_quoted_short(default_config, path, value, key):
    with pytest.raises(ConfigError) as info:
        validate_config(_mutate(default_config, path, value))
    assert info.value.key == key
    assert len(str(info.value)) < 300 and "characters)" in str(info.value), str(info.value)[:300]


# ----------------------------------------------------------------------------- names results/ keeps
@pytest.mark.parametrize("name, entry, holds", [
    ("report.html", "report.html", "the report (snakemake --report results/report.html)"),
    ("report.zip", "report.zip", "the report as an archive"),
    ("summary.md", "summary.md", "the summary of the runs"),
    ("summary.parquet", "summary.parquet", "the summary of the runs"),
    ("summary_tests.parquet", "summary_tests.parquet", "the t-tests behind the summary's markers"),
    ("summary.html", "summary.html", "the summary's page of the report"),
    ("summary.html.log", "summary.html.log", "the log of the summary's page of the report"),
    ("tables", "tables", "the cross-run tables"),
    ("figures", "figures", "the figures and the data they draw"),
    ("pq_matrix", "pq_matrix", "the ADORE PQ experiment"),
    ("datasets", "datasets", "the prepared datasets"),
    ("Report.HTML", "report.html", "the report (snakemake --report results/report.html) (a file system that "
                                   "ignores case sees one name)"),
])
def test_a_run_may_not_take_a_name_of_the_results_folder(default_config, name, entry, holds):
    default_config["runs"][name] = {"method": "bm25"}
    with pytest.raises(ConfigError) as info:
        validate_config(default_config)
    assert info.value.key == f"runs.{name}"
    assert info.value.message.startswith(f"the name {name!r} is reserved: results/{entry} holds {holds}")


def test_the_reserved_names_are_the_entries_the_layout_puts_in_results(default_config):
    from hardneg.experiments import EXPERIMENTS, RESERVED_NAMES
    from hardneg.io import layout as results_layout
    from hardneg.io.layout import reserved_entry
    from hardneg.pipeline.plan import Plan

    plan = Plan(validate_config(default_config))
    layout = plan.layout
    made = [layout.summary("md"), layout.summary("parquet"), layout.summary_tests(), layout.table("x", "md"),
            layout.figure("tsne", "png"), layout.experiment("pq_matrix", "matrix.md"),
            layout.experiment("figures", "logs/tsne.log"), layout.dataset_dir("synthetic"),
            layout.experiment("false_negatives", "leakage.md")]
    for page in plan.report.markdown_pages():  # rules/report.smk: {page}.html, its log and its benchmark
        made += [f"{page}.html", f"{page}.html.log", f"{page}.html.tsv"]
    entries = {path.split("/")[1] for path in made}
    assert entries <= set(RESERVED_NAMES), entries - set(RESERVED_NAMES)
    assert {"report.html", "report.zip"} | entries == set(RESERVED_NAMES)
    assert reserved_entry("bm25") is None and reserved_entry("tables2") is None
    assert reserved_entry("FIGURES") == "figures"
    # each experiment reserves its own folder; the layout reserves none of them
    assert set(EXPERIMENTS) <= set(RESERVED_NAMES) - set(results_layout.RESERVED_NAMES)
    assert all(name in experiment.reserved_names for name, experiment in EXPERIMENTS.items())
    assert reserved_entry("PQ_Matrix", RESERVED_NAMES) == "pq_matrix" and reserved_entry("pq_matrix") is None


@pytest.mark.parametrize("target", ["results/adore_star/metrics.json", "results/bm25/config.yaml",
                                    "elsewhere/metrics.json", "exports/star.parquet", "rankings/test.trec"])
def test_a_result_given_as_a_config_file_is_named_as_a_misplaced_target(tmp_path, monkeypatch, target):
    """Snakemake's --configfile takes every path after it, so a target written after it arrives as a config."""
    from hardneg.errors import ConfigFileError
    from hardneg.pipeline.config import read_config_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / target).parent.mkdir(parents=True)
    (tmp_path / target).write_text('{"measures": {"RR@10": 0.3}}\n')
    (tmp_path / "my.yaml").write_text("seed: 1\n")
    with pytest.raises(ConfigFileError) as info:
        read_config_files(["my.yaml", str(tmp_path / target)])
    assert str(info.value) == (f"{target}: a result of the workflow, read as a config file: --configfile takes every "
                               f"path after it as a config file, so write targets before it (snakemake --cores all "
                               f"{target} --configfile my.yaml) or join the file to it with = (snakemake --cores "
                               f"all --configfile=my.yaml {target})")
    assert read_config_files(["my.yaml"]) == {"seed": 1}
