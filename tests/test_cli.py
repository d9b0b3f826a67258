from hardneg.cli import main
from tests.conftest import REPO


def test_check_config_lists_runs(capsys):
    assert main(["check-config", str(REPO / "config" / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "run bm25: method bm25, dataset synthetic" in out


def test_check_config_reports_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text((REPO / "config" / "config.yaml").read_text().replace("k1: 0.9", "k1: fast"))
    assert main(["check-config", str(bad)]) == 2
    assert "config key 'runs.bm25.params.k1': expected number, got 'fast'" in capsys.readouterr().err


def test_methods_lists_the_registry(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "star (dense): static hard negatives" in out and "[hardneg.methods.star]" in out
    assert "  inputs.negatives: miner (required)" in out and "  params.mining" in out
    assert "bm25 (lexical)" in out and "  params.k1" in out
