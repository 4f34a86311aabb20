"""The composite action as GitHub runs it: its outputs are exactly the step outputs reprogate
writes, its script gives the token only to the commands that post, and its cache cannot be
written by pull-request code."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from support import REPO, require_tool

from reprogate.core.documents import load_document
from reprogate.output.workflow import STEP_OUTPUTS

ACTION = load_document(REPO / "action.yml").data


# the commands run.sh runs; STEP_OUTPUTS says which commands write each output ("detect/gate: ...")
ACTION_COMMANDS = {"gate", "validate", "detect", "rebuild", "status", "audit", "attest", "badge"}


def test_action_outputs_are_exactly_the_step_outputs_its_commands_write() -> None:
    """No output the action cannot produce (dataset verify's `ok` is a step output of the command
    line, which the action does not run)."""
    written = {name for name, meaning in STEP_OUTPUTS.items() if set(meaning.split(":", 1)[0].split("/")) & ACTION_COMMANDS}
    assert "ok" in STEP_OUTPUTS and "ok" not in written
    assert set(ACTION["outputs"]) == written
    for name, output in ACTION["outputs"].items():
        assert output["value"] == f"${{{{ steps.run.outputs.{name} || steps.untrusted.outputs.{name} }}}}"


def command_steps() -> dict[str, dict]:
    return {step["id"]: step for step in ACTION["runs"]["steps"] if step.get("id") in ("run", "untrusted")}


SET_UP_ONLY = {"python-version"}  # read by the set-up steps, not by the command


def test_every_input_reaches_the_script() -> None:
    for step in command_steps().values():
        passed = " ".join(str(v) for v in step["env"].values())
        for name in set(ACTION["inputs"]) - SET_UP_ONLY:
            if name != "token" or step["id"] == "run":
                assert f"inputs.{name} }}}}" in passed, (step["id"], name)
    python = next(step for step in ACTION["runs"]["steps"] if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["if"] == "inputs.python-version != ''" and python["with"]["python-version"] == "${{ inputs.python-version }}"


def test_only_the_posting_step_holds_the_token_and_exactly_one_step_runs() -> None:
    """The step shell of rebuild, validate, detect, audit and gate compute never has the token in
    its environment (code under test could read an ancestor's /proc/*/environ); its `if:` is the
    exact negation of the posting step's."""
    steps = command_steps()
    assert "GITHUB_TOKEN" in steps["run"]["env"] and not any("token" in str(v) for v in steps["untrusted"]["env"].values())
    assert not any("TOKEN" in key for key in steps["untrusted"]["env"])
    posting = steps["run"]["if"]
    assert steps["untrusted"]["if"] == f"${{{{ !({posting}) }}}}"
    for command, mode in [("gate", "full"), ("gate", "publish"), ("status", "full")]:
        assert eval_if(posting, command, mode), (command, mode)
    for command, mode in [("gate", "compute"), ("rebuild", "full"), ("validate", "full"), ("detect", "full"), ("audit", "full")]:
        assert not eval_if(posting, command, mode), (command, mode)


def eval_if(expression: str, command: str, mode: str) -> bool:
    """The posting step's condition, evaluated for given inputs (it uses only ==, !=, && and ||)."""
    python = expression.replace("&&", " and ").replace("||", " or ").replace("inputs.command", repr(command)).replace("inputs.mode", repr(mode))
    return bool(eval(python.replace("'", '"'), {"__builtins__": {}}))


def test_the_cache_is_deleted_first_and_saved_before_anything_runs_and_never_from_a_pull_request() -> None:
    steps = ACTION["runs"]["steps"]
    names = [step.get("uses", "").split("@")[0] or step.get("id", step.get("name")) for step in steps]
    assert names.index("actions/cache/restore") < names.index("actions/cache/save") < names.index("run")
    assert names.index("key") < names.index("actions/cache/restore")
    assert 'rm -rf "$venv"' in (REPO / "action" / "key.sh").read_text()
    save = next(step for step in steps if step.get("uses", "").startswith("actions/cache/save@"))
    assert "github.event_name != 'pull_request'" in save["if"] and "github.event_name != 'pull_request_target'" in save["if"]
    assert not any(step.get("uses", "").startswith("actions/cache@") for step in steps), "actions/cache saves at job end, after pull-request code ran"


@pytest.fixture
def fake_venv(tmp_path: Path) -> Path:
    """$VENV/bin/reprogate that records its arguments and whether it saw a token."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "reprogate"
    script.write_text('#!/usr/bin/env bash\nprintf \'%s\\n\' "token=${GITHUB_TOKEN:-}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return venv


def run_script(venv: Path, cwd: Path, **inputs: str) -> list[str]:
    require_tool("bash")
    env = {"PATH": os.environ["PATH"], "VENV": str(venv), "GITHUB_TOKEN": "ghs_secret", **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}
    done = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    "inputs, token, args",
    [
        ({"command": "gate"}, True, ["gate", "--format", "github"]),
        ({"command": "gate", "mode": "publish", "result_file": "r.json"}, True, ["gate", "--format", "github", "--mode", "publish", "--result-file", "r.json"]),
        ({"command": "gate", "mode": "compute"}, False, ["gate", "--format", "github", "--mode", "compute", "--result-file", "reprogate-gate/result.json"]),
        ({"command": "validate", "fail_on": "warning"}, False, ["validate", "--format", "github", "--strict", "--"]),
        ({"command": "detect", "base": "origin/main"}, False, ["detect", "--base", "origin/main", "--head", "HEAD", "--format", "github"]),
        ({"command": "rebuild", "record": "r.yaml"}, False, ["rebuild", "--environment", "reference", "--format", "github", "--", "r.yaml"]),
        (
            {"command": "rebuild", "record": "r.yaml", "nonce": "n" * 20},
            False,
            ["rebuild", "--environment", "reference", "--nonce", "n" * 20, "--format", "github", "--", "r.yaml"],
        ),
        (
            {"command": "rebuild", "record": "r.yaml", "environment": "candidate"},
            False,
            ["rebuild", "--environment", "candidate", "--format", "github", "--", "r.yaml"],
        ),
        ({"command": "audit"}, False, ["audit", "--"]),
        (
            {"command": "attest", "verdict": "v/verdict.json", "nonce": "n" * 20, "extra_args": "--out=s.json"},
            False,
            ["attest", "--nonce", "n" * 20, "--out=s.json", "--", "v/verdict.json"],
        ),
        (
            {"command": "badge", "verdict": "v.json", "nonce": "n" * 20, "rebuild_result": "success"},
            False,
            ["badge", "--nonce", "n" * 20, "--rebuild-result", "success", "--", "v.json"],
        ),
    ],
)
def test_only_the_posting_commands_get_the_token(fake_venv: Path, tmp_path: Path, inputs: dict[str, str], token: bool, args: list[str]) -> None:
    out = run_script(fake_venv, tmp_path, **inputs)
    assert out[0] == ("token=ghs_secret" if token else "token=")
    assert out[1:] == args


def test_status_posts_every_verdict_in_a_folder(fake_venv: Path, tmp_path: Path) -> None:
    for i in (1, 0):
        folder = tmp_path / "verdicts" / f"reprogate-verdict-{i}"
        folder.mkdir(parents=True)
        (folder / "verdict.json").write_text("{}")
    records = json.dumps(["a.yaml", "b.yaml"])
    out = run_script(
        fake_venv,
        tmp_path,
        command="status",
        verdict="verdicts",
        expect_records=records,
        also_context="reprogate/baseline",
        sha="a" * 40,
        pull_request="5",
        nonce="n" * 20,
        rebuild_result="success",
        base="b" * 40,
    )
    assert out[0] == "token=ghs_secret"
    assert out[1:] == [
        "github",
        "status",
        "--from-verdict",
        "verdicts/reprogate-verdict-0/verdict.json",
        "--from-verdict",
        "verdicts/reprogate-verdict-1/verdict.json",
        "--nonce",
        "n" * 20,
        "--rebuild-result",
        "success",
        "--base",
        "b" * 40,
        "--expect-records",
        records,
        "--also-context",
        "reprogate/baseline",
        "--sha",
        "a" * 40,
        "--pr",
        "5",
    ]


def test_status_with_no_verdict_at_all_still_names_one(fake_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "verdicts").mkdir()
    out = run_script(fake_venv, tmp_path, command="status", verdict="verdicts")
    assert out[1:] == ["github", "status", "--from-verdict", "verdicts/verdict.json"]


def test_badge_judges_every_verdict_in_a_folder_and_names_a_missing_one(fake_venv: Path, tmp_path: Path) -> None:
    for i in (1, 0):
        (tmp_path / "verdicts" / f"reprogate-verdict-{i}").mkdir(parents=True)
        (tmp_path / "verdicts" / f"reprogate-verdict-{i}" / "verdict.json").write_text("{}")
    out = run_script(fake_venv, tmp_path, command="badge", verdict="verdicts")
    assert out[1:] == ["badge", "--", "verdicts/reprogate-verdict-0/verdict.json", "verdicts/reprogate-verdict-1/verdict.json"]
    (tmp_path / "none").mkdir()
    assert run_script(fake_venv, tmp_path, command="badge", verdict="none")[1:] == ["badge", "--", "none/verdict.json"]
    (tmp_path / "one").mkdir()
    assert run_script(fake_venv, tmp_path, command="attest", verdict="one")[1:] == ["attest", "--", "one/verdict.json"]


def test_unknown_command_is_refused_without_echoing_it(fake_venv: Path, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "VENV": str(fake_venv), "INPUT_COMMAND": "x\n::set-output name=a::b"}
    done = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "set-output" not in done.stdout


def test_the_action_refuses_windows_and_a_rebuild_off_linux_before_anything_else() -> None:
    """validate, detect and the other commands run on macOS runners too; a rebuild only on Linux,
    and the bash-over-a-POSIX-venv scripts not on Windows: each said, exit 2, as the first step."""
    first = ACTION["runs"]["steps"][0]
    assert first["if"] == "runner.os == 'Windows' || (runner.os != 'Linux' && inputs.command == 'rebuild')"
    assert "exit 2" in first["run"] and first["run"].count("::error") == 2
    cases = [("Linux", "rebuild", False), ("macOS", "validate", False), ("macOS", "detect", False), ("macOS", "rebuild", True), ("Windows", "validate", True)]
    for os_name, command, refused in cases:
        python = first["if"].replace("||", " or ").replace("&&", " and ").replace("runner.os", repr(os_name)).replace("inputs.command", repr(command))
        assert bool(eval(python.replace("'", '"'), {"__builtins__": {}})) is refused, (os_name, command)
    for os_name in ("Linux", "macOS"):
        done = subprocess.run(["bash", "-c", first["run"]], env={"PATH": os.environ["PATH"], "RUNNER_OS": os_name}, capture_output=True, text=True)
        assert done.returncode == 2 and "rebuild runs on Linux runners only" in done.stdout and os_name in done.stdout
    done = subprocess.run(["bash", "-c", first["run"]], env={"PATH": os.environ["PATH"], "RUNNER_OS": "Windows"}, capture_output=True, text=True)
    assert done.returncode == 2 and "runs on Linux and macOS runners" in done.stdout


def test_a_pull_request_restores_the_newest_venv_made_the_same_way(tmp_path: Path) -> None:
    """A run whose revision has no cached venv (every pull request that bumps the action, and
    every pull request of a repository whose default branch rarely runs it) restores one of the
    same Python, venv path and extras, and the install writes this revision over it; the save
    (default-branch runs only) stores it under the exact key."""
    restore = next(step for step in ACTION["runs"]["steps"] if step.get("uses", "").startswith("actions/cache/restore@"))
    assert restore["with"]["restore-keys"] == "${{ steps.key.outputs.restore-prefix }}"
    install = next(step for step in ACTION["runs"]["steps"] if step.get("name") == "Install reprogate from the action's checkout")
    assert install["if"] == "steps.restore.outputs.cache-hit != 'true'", "a partial match is no hit: the install runs"
    assert '[ ! -d "$VENV" ] || chmod -R u+w "$VENV"' in install["run"]
    tree = action_tree(tmp_path)
    first = cache_key(tree, tmp_path)
    assert first["key"].startswith(first["restore-prefix"]) and first["key"] != first["restore-prefix"]
    module = tree / "reprogate" / "rebuild" / "claim.py"
    module.write_text(module.read_text() + "\n# another revision\n")
    second = cache_key(tree, tmp_path)
    assert second["key"] != first["key"] and second["restore-prefix"] == first["restore-prefix"], "another revision, the same way of making it"
    rebuild = cache_key(tree, tmp_path, "rebuild")
    assert rebuild["restore-prefix"] != first["restore-prefix"], "a venv without the rebuild extras is never the base of one with them"


def test_the_cache_key_is_the_same_where_only_shasum_exists(tmp_path: Path) -> None:
    """macOS runners have shasum, not sha256sum: key.sh digests the same bytes with either."""
    require_tool("shasum")
    tree = action_tree(tmp_path)
    expected = cache_key(tree, tmp_path)
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "find", "sort", "xargs", "cut", "rm", "python3", "shasum", "perl", "cat", "env", "dirname", "printf"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    assert not (tools / "sha256sum").exists()
    output = tmp_path / "output-shasum"
    env = {"PATH": str(tools), "GITHUB_ACTION_PATH": str(tree), "RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_OUTPUT": str(output)}
    env["INPUT_COMMAND"] = "validate"
    done = subprocess.run([str(tools / "bash"), str(REPO / "action" / "key.sh")], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found = dict(line.split("=", 1) for line in output.read_text().splitlines())
    tree_digest = found["key"].removeprefix(found["restore-prefix"])  # python3 is a link here, so the first part names another path
    assert len(tree_digest) == 16 and tree_digest == expected["key"].removeprefix(expected["restore-prefix"])


def test_the_description_fits_the_marketplace() -> None:
    assert len(ACTION["description"]) < 125


def cache_key(tree: Path, tmp_path: Path, command: str = "validate") -> dict[str, str]:
    """What action/key.sh writes to $GITHUB_OUTPUT for the action checked out at `tree`."""
    require_tool("bash")
    output = tmp_path / f"output-{len(list(tmp_path.glob('output-*')))}"
    env = {"PATH": os.environ["PATH"], "GITHUB_ACTION_PATH": str(tree), "RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(["bash", str(REPO / "action" / "key.sh")], env={**env, "INPUT_COMMAND": command}, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in output.read_text().splitlines())


def action_tree(tmp_path: Path) -> Path:
    """The files the action's install copies, checked out at tmp_path/action."""
    tree = tmp_path / "action"
    for name in ("reprogate", "schemas"):
        shutil.copytree(REPO / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, tree / name)
    return tree


def test_the_cache_key_changes_with_any_installed_file_the_extras_and_the_venv_path(tmp_path: Path) -> None:
    tree = action_tree(tmp_path)
    first = cache_key(tree, tmp_path)
    assert first == cache_key(tree, tmp_path), "the same tree, the same key"
    (tree / "reprogate" / "__pycache__").mkdir(exist_ok=True)
    (tree / "reprogate" / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert cache_key(tree, tmp_path) == first, "bytecode the install never copies does not count"
    module = tree / "reprogate" / "rebuild" / "claim.py"
    module.write_text(module.read_text() + "\n# one line more\n")
    changed = cache_key(tree, tmp_path)
    assert changed["key"] != first["key"], "a revision that differs in one module gets its own venv"
    (tree / "schemas" / "run-record.schema.json").write_text((tree / "schemas" / "run-record.schema.json").read_text() + " ")
    assert cache_key(tree, tmp_path)["key"] != changed["key"]
    rebuild = cache_key(tree, tmp_path, "rebuild")
    assert rebuild["extras"] == "rebuild" and rebuild["path"].endswith("reprogate-venv-rebuild") and rebuild["key"] != cache_key(tree, tmp_path)["key"]


def test_records_and_extra_args_are_one_argument_per_line_never_split_or_expanded(fake_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "a.yaml").write_text("kind: RunRecord\n")
    out = run_script(fake_venv, tmp_path, command="validate", records="records/*.yaml\n  my runs/b.yaml  \n\n", extra_args="--strict\n")
    assert out[1:] == ["validate", "--format", "github", "--strict", "--", "records/*.yaml", "my runs/b.yaml"]
    out = run_script(fake_venv, tmp_path, command="audit", records="records/**/*.yaml")
    assert out[1:] == ["audit", "--", "records/**/*.yaml"]


def test_the_working_directory_is_where_the_command_runs(fake_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    script = fake_venv / "bin" / "reprogate"
    script.write_text('#!/usr/bin/env bash\nprintf \'%s\\n\' "token=${GITHUB_TOKEN:-}" "$PWD" "$@"\n')
    out = run_script(fake_venv, tmp_path, command="detect", base="origin/main", working_directory="project")
    assert out[1] == str(tmp_path / "project") and out[2:4] == ["detect", "--base"]


@pytest.mark.parametrize(
    "inputs, args",
    [
        ({"command": "validate", "records": "records/"}, ["validate", "--format", "sarif", "--", "records/"]),
        ({"command": "detect", "base": "origin/main"}, ["detect", "--base", "origin/main", "--head", "HEAD", "--format", "sarif"]),
    ],
)
def test_sarif_file_writes_the_sarif_format_there(fake_venv: Path, tmp_path: Path, inputs: dict[str, str], args: list[str]) -> None:
    """sarif-file: the command's stdout (the SARIF log) goes to the file, and nothing to the log."""
    assert run_script(fake_venv, tmp_path, sarif_file="out.sarif", **inputs) == []
    assert (tmp_path / "out.sarif").read_text().splitlines() == ["token=", *args]
    env = {
        "PATH": os.environ["PATH"],
        "VENV": str(fake_venv),
        "INPUT_SARIF_FILE": "out.sarif",
        "INPUT_EXTRA_ARGS": "--format=github",
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    refused = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "extra-args may not give --format" in refused.stdout


def action_step_runs(step_id: str, outputs: dict[str, str]) -> bool:
    """Whether the action's step `step_id` runs, given the outputs of the steps before it (its
    `if:` uses only ==, != and && over step outputs and github.event_name, here workflow_dispatch)."""
    step = next(s for s in ACTION["runs"]["steps"] if s.get("id") == step_id)
    if "if" not in step:
        return True
    expression = str(step["if"])
    for name, value in sorted(outputs.items(), key=lambda item: -len(item[0])):
        expression = expression.replace(name, repr(value))
    python = expression.replace("&&", " and ").replace("||", " or ").replace("github.event_name", repr("workflow_dispatch"))
    return bool(eval(python, {"__builtins__": {}}))


@pytest.mark.parametrize(
    ("command", "mode"), [("status", "full"), ("rebuild", "full"), ("gate", "full"), ("gate", "publish"), ("attest", "full"), ("badge", "full")]
)
def test_a_poisoned_cache_entry_with_a_matching_stamp_never_serves_a_command_whose_answer_counts(tmp_path: Path, command: str, mode: str) -> None:
    """The venv's digest stamp lives inside the cache entry. Code under test that ran unsandboxed in a
    default-branch job (a Slurm launcher, allow-unsandboxed) can write an entry for the next key,
    with a reprogate that posts success and a stamp that matches it. Before this fix every command
    restored it and seal.sh accepted it; now the commands that post, or write or vouch for a
    verdict, install fresh and seal what they installed. The steps run as the runner runs them."""
    require_tool("bash")
    outputs = tmp_path / "outputs"
    outputs.write_text("")
    base = {"PATH": os.environ["PATH"], "GITHUB_ACTION_PATH": str(REPO), "RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_OUTPUT": str(outputs)}
    (tmp_path / "runner-temp").mkdir()
    keyed = subprocess.run(
        ["bash", str(REPO / "action" / "key.sh")], env={**base, "INPUT_COMMAND": command, "INPUT_MODE": mode}, capture_output=True, text=True
    )
    assert keyed.returncode == 0, keyed.stderr
    key = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    venv = Path(key["path"])

    def venv_with(says: str) -> None:
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "reprogate").write_text(f"#!/usr/bin/env bash\necho {says}\n")
        (venv / "bin" / "reprogate").chmod(0o755)

    step_outputs = {f"steps.key.outputs.{k}": v for k, v in key.items()}
    hit = ""
    if action_step_runs("restore", step_outputs):  # the poisoner's entry, with the stamp its own content digest
        venv_with("poisoned")
        digest = subprocess.run(["bash", "-c", f'. "{REPO}/action/digest.sh" && venv_digest "$0"', str(venv)], capture_output=True, text=True, check=True)
        (venv / ".reprogate-venv-digest").write_text(digest.stdout)
        hit = "true"
    if hit != "true":  # the install step (`cache-hit != 'true'`)
        venv_with("installed")
    outputs.write_text("")
    sealed = subprocess.run(["bash", str(REPO / "action" / "seal.sh")], env={**base, "VENV": str(venv), "RESTORED": hit}, capture_output=True, text=True)
    assert sealed.returncode == 0, sealed.stderr
    digest = dict(line.split("=", 1) for line in outputs.read_text().splitlines())["digest"]
    ran = subprocess.run(
        ["bash", str(REPO / "action" / "run.sh")],
        env={
            **base,
            "VENV": str(venv),
            "VENV_DIGEST": digest,
            "INPUT_COMMAND": command,
            "INPUT_MODE": mode,
            "INPUT_RECORD": "r.yaml",
            "INPUT_VERDICT": "v.json",
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "poisoned" not in ran.stdout, f"{command} ran the venv restored from a poisoned cache entry"
    assert "installed" in ran.stdout, ran.stdout + ran.stderr
    for path in [venv, *venv.rglob("*")]:
        path.chmod(0o755)


def test_the_commands_that_post_nothing_still_restore_the_cache(tmp_path: Path) -> None:
    for command, mode in [("validate", "full"), ("detect", "full"), ("audit", "full"), ("gate", "compute")]:
        outputs = tmp_path / f"{command}-{mode}"
        env = {"PATH": os.environ["PATH"], "GITHUB_ACTION_PATH": str(REPO), "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(outputs)}
        subprocess.run(["bash", str(REPO / "action" / "key.sh")], env={**env, "INPUT_COMMAND": command, "INPUT_MODE": mode}, check=True, capture_output=True)
        key = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
        assert action_step_runs("restore", {f"steps.key.outputs.{k}": v for k, v in key.items()}), (command, mode)
