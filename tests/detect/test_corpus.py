"""detect on real commits of public ML repositories (tests/fixtures/detect-corpus).

Each case holds the files one real commit changed, as they were before and after it, and a
truth.yaml written by reading that commit's diff: layer -> file -> group -> what changed. The test
commits both sides into a fresh git repository, runs detect between them, and scores the changes
it reports as (layer, file, group, subject) against the truth, counting repeats (a build matrix
may change the same key several times). Precision and recall are computed per layer and printed;
each must reach 0.95 on the whole corpus.

The same is done, and printed under its own heading, for tests/fixtures/detect-corpus-heldout:
commits of other repositories that were not used to tune the detectors (made with
`make.py MIRRORS_DIR --held-out`), so its score is the one that measures them.

And again for tests/fixtures/detect-corpus-heldout2 (`make.py MIRRORS_DIR --held-out-2`): commits of
yet other repositories, whose truths were written from the diffs before detect was run on them, so
that nobody has tuned on them; it is scored against the same bar, under its own heading.

And for the driver corpus (`make.py MIRRORS_DIR --driver` / `--driver-held-out`): commits that move
CUDA base images, NGC releases, GPU runners and CI matrices, with the driver floor as the rule (a
tag whose CUDA needs the same minimum driver is no driver change). detect-corpus-driver holds the
repositories the driver layer was then tuned on (text-embeddings-inference, optimum, lmdeploy);
detect-corpus-driver-heldout (NeMo, DeepLearningExamples, detectron2) was scored once, after
tuning, with truths written before detect ran on either set.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from support import FIXTURES, git

CORPUS = FIXTURES / "detect-corpus"
CORPORA = {
    "detect-corpus": CORPUS,
    "detect-corpus-heldout": FIXTURES / "detect-corpus-heldout",
    "detect-corpus-heldout2": FIXTURES / "detect-corpus-heldout2",
    "detect-corpus-driver": FIXTURES / "detect-corpus-driver",
    "detect-corpus-driver-heldout": FIXTURES / "detect-corpus-driver-heldout",
}
CASES = sorted(p for p in CORPUS.iterdir() if (p / "truth.yaml").is_file())
LAYERS = ("framework", "base-image", "driver", "dataset")
BAR = 0.95

Unit = tuple[str, str, str, str]


def truth(case: Path) -> Counter[Unit]:
    data = yaml.safe_load((case / "truth.yaml").read_text()) or {}
    found: Counter[Unit] = Counter()
    for layer, files in data.items():
        assert layer in LAYERS, f"{case.name}: unknown layer {layer}"
        for path, groups in (files or {}).items():
            for group, subjects in (groups or {}).items():
                found.update((layer, path, group, subject) for subject in subjects)
    return found


def detected(case: Path, tmp_path: Path) -> Counter[Unit]:
    from reprogate.core.config import load_config
    from reprogate.detect.run import detect

    repo = tmp_path / case.name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for side in ("before", "after"):
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        if (case / side).is_dir():
            shutil.copytree(case / side, repo, dirs_exist_ok=True, copy_function=shutil.copyfile)  # fresh mtimes: git must not trust stat data
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", side)
    result = detect(repo, "HEAD~1", "HEAD", load_config(repo))
    return Counter((c.layer, c.path, c.group, c.subject) for c in result.changes if c.layer in LAYERS)


def cases(corpus: str) -> list[Path]:
    return sorted(p for p in CORPORA[corpus].iterdir() if (p / "truth.yaml").is_file())


@pytest.fixture(scope="module", params=list(CORPORA))
def scores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Counter[Unit]]]:
    tmp = tmp_path_factory.mktemp(request.param)
    return {case.name: {"truth": truth(case), "found": detected(case, tmp)} for case in cases(request.param)}


def test_the_corpus_covers_every_layer_and_has_negatives() -> None:
    layers = {unit[0] for case in CASES for unit in truth(case)}
    assert set(LAYERS) <= layers
    assert any(not truth(case) for case in CASES), "docs-only commits (no change expected) belong in the corpus"
    for corpus in ("detect-corpus-heldout", "detect-corpus-heldout2"):
        held_out = cases(corpus)
        assert held_out and any(all(unit[0] != "driver" for unit in truth(case)) for case in held_out), f"{corpus}: driver negatives belong in it"


def _table(scores: dict[str, dict[str, Counter[Unit]]]) -> tuple[str, dict[str, tuple[float, float]]]:
    figures: dict[str, tuple[float, float]] = {}
    lines = [f"{'layer':<12} {'truth':>6} {'found':>6} {'hits':>6} {'precision':>10} {'recall':>8}"]
    for layer in LAYERS:
        expected = sum((Counter({u: n for u, n in s["truth"].items() if u[0] == layer}) for s in scores.values()), Counter())
        found = sum((Counter({u: n for u, n in s["found"].items() if u[0] == layer}) for s in scores.values()), Counter())
        hits = sum((expected & found).values())
        precision = hits / sum(found.values()) if found else 1.0
        recall = hits / sum(expected.values()) if expected else 1.0
        figures[layer] = (precision, recall)
        lines.append(f"{layer:<12} {sum(expected.values()):>6} {sum(found.values()):>6} {hits:>6} {precision:>10.3f} {recall:>8.3f}")
    return "\n".join(lines), figures


def test_precision_and_recall_per_layer(scores: dict[str, dict[str, Counter[Unit]]], request: pytest.FixtureRequest) -> None:
    corpus = request.node.callspec.params["scores"]
    table, figures = _table(scores)
    misses = []
    for name, s in scores.items():
        for unit in sorted((s["truth"] - s["found"]).elements()):
            misses.append(f"  missed  {name}: {unit}")
        for unit in sorted((s["found"] - s["truth"]).elements()):
            misses.append(f"  extra   {name}: {unit}")
    print(f"\n{corpus}: detect on {len(scores)} real commits\n{table}\n" + "\n".join(misses))
    for layer, (precision, recall) in figures.items():
        assert precision >= BAR and recall >= BAR, f"{corpus}: {layer}: precision {precision:.3f}, recall {recall:.3f}\n{table}\n" + "\n".join(misses)
