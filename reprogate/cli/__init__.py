"""Command line: parse arguments, call the module that does the work, print, set the exit code.

No logic lives here. Work modules are imported inside each command so `reprogate validate` on a
GitHub-hosted runner never pays for torch, NVML, scipy or requests.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reprogate import __version__
from reprogate.core.diagnostics import ExitCode

if TYPE_CHECKING:
    from reprogate.core.documents import DocumentError

FORMATS = click.Choice(["text", "json", "github"])


def _unreadable(exc: "DocumentError", code: ExitCode | None = None) -> None:
    """Report a file that could not be loaded (file:line:col: message) and exit."""
    first = exc.diagnostics[0]
    click.echo(f"{first.path}:{first.location.line}:{first.location.col}: {first.message}", err=True)
    sys.exit(int(code if code is not None else exc.exit_code))


def _finish(code: ExitCode, lines: list[str]) -> None:
    """Print a command's lines and exit with its code."""
    for line in lines:
        click.echo(line)
    sys.exit(int(code))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="reprogate")
def main() -> None:
    """Reproducible ML training runs as a release gate.

    Exit codes: 0 pass, 1 a check failed, 2 bad usage or unreadable input, 3 infrastructure
    (registry, API or device unreachable after retries).
    """


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None, help="Largest file read (default 16 MiB).")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None, help="Repository root for addressed paths (default: nearest folder with .reprogate.yaml or .git).")
@click.option("--strict", is_flag=True, help="Fail on warnings too (expired retention, dirty source without diff).")
@click.option("-v", "--verbose", is_flag=True, help="Also list files that passed or were skipped.")
def validate(paths: tuple[str, ...], fmt: str, max_bytes: int | None, root: Path | None, strict: bool, verbose: bool) -> None:
    """Check records and manifests: schema and semantic rules."""
    from reprogate.core.documents import DEFAULT_MAX_BYTES
    from reprogate.output.findings import RENDERERS, render_text
    from reprogate.validate.runner import Options, validate as run

    report = run(list(paths), Options(max_bytes=max_bytes or DEFAULT_MAX_BYTES, root=root, strict=strict))
    if fmt == "text":
        render_text(report, click.echo, verbose)
    else:
        RENDERERS[fmt](report, click.echo)
    sys.exit(int(report.exit_code))


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--canonical", is_flag=True, help="Digest the parsed YAML/JSON in canonical-v1 form instead of the raw bytes.")
@click.option("--manifest", is_flag=True, help="Digest a dataset manifest the way a record pins it (canonical, without its own digest field).")
def digest(files: tuple[Path, ...], canonical: bool, manifest: bool) -> None:
    """Print the sha256: or canonical-v1: digest a record pins."""
    from reprogate.core.digests import digest_for

    code = ExitCode.OK
    for path in files:
        value, problem = digest_for(path, canonical=canonical or manifest, manifest=manifest)
        if problem:
            click.echo(f"{path}: {problem}", err=True)
            code = ExitCode.USAGE
        else:
            click.echo(f"{value}  {path}")
    sys.exit(int(code))


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the capture here (YAML, or JSON for .json); - for stdout.")
@click.option("--into", "record", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="Fill the environment sections of this record, leaving a person's sections as written.")
@click.option("--image", default=None, help="The image this job runs, as REF@sha256:... (else REPROGATE_IMAGE, else the Docker engine).")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."), show_default=True, help="The project folder (a repository or a folder in one).")
@click.option("--no-framework", is_flag=True, help="Do not import torch (saves about a second; the software section then omits it).")
def capture(output: Path | None, record: Path | None, image: str | None, root: Path, no_framework: bool) -> None:
    """Write the environment half of a record from this machine."""
    from reprogate.capture.command import run_capture

    code, messages, text = run_capture(output, record, image, root, not no_framework)
    for message in messages:
        click.echo(message, err=True)
    if text is not None:
        click.echo(text, nl=False)
    sys.exit(int(code))


@main.command()
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="Local ranks to start (default: one per GPU, or 2 on a CPU). Ignored under torchrun, which sets WORLD_SIZE.")
@click.option("--backend", type=click.Choice(["gloo", "nccl"]), default=None, help="Collective backend (default: nccl with GPUs, else gloo).")
@click.option("--timeout", type=click.FloatRange(min=0.5), default=30.0, show_default=True, help="Seconds each stage may take.")
@click.option("--record", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="Run record whose GPU UUIDs must be present.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the JSON result here (store it with the run).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print.")
def preflight(world_size: int | None, backend: str | None, timeout: float, record: Path | None, output: Path | None, fmt: str) -> None:
    """Prove GPUs, framework op, process group and a tiny collective work."""
    import json

    from reprogate.core.fileio import atomic_write
    from reprogate.rebuild.preflight import PreflightOptions, render_text, run_preflight

    report = run_preflight(PreflightOptions(world_size, backend, timeout, record))
    payload = json.dumps(report.as_json(), indent=2)
    if output is not None:
        atomic_write(output, payload + "\n")
    click.echo(payload if fmt == "json" else render_text(report))
    sys.exit(int(report.exit_code))


@main.command()
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Empty folder to rebuild in (kept afterwards); default a temporary one.")
@click.option("--out", "output_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("reprogate-rebuild"), show_default=True, help="Where verdict.json and report.md are written.")
@click.option("--steps", type=click.IntRange(min=1), default=None, help="Compare at most this many steps (the entrypoint sees REPROGATE_MAX_STEPS).")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Rebuild seeds: 1 uses the predeclared interval, 2+ a Welch TOST against the reference seeds.")
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="Ranks to run (default the record's); must be inside the envelope.")
@click.option("--image", default=None, help="The image this rebuild runs in, REF@sha256:... (else REPROGATE_IMAGE).")
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True, help="Seconds each seed's run may take.")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="What to print.")
def rebuild(record: Path, workdir: Path | None, output_dir: Path, steps: int | None, seeds: int, world_size: int | None, image: str | None, timeout: float, fmt: str) -> None:
    """Run the rebuild drill: stages in order, verdict and report."""
    from reprogate.rebuild.command import run_command

    code, text, messages = run_command(record, workdir, output_dir, steps, seeds, world_size, image, timeout, fmt)
    for message in messages:
        click.echo(message, err=True)
    click.echo(text, nl=False)
    sys.exit(int(code))


@main.command()
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--alpha", type=click.FloatRange(min=0.0001, max=0.5), default=None, help="Override contract.metric.alpha.")
def interval(record: Path, alpha: float | None) -> None:
    """Compute and store the seed-aware interval in a record."""
    from reprogate.core.documents import DocumentError
    from reprogate.rebuild.interval import IntervalError, store

    try:
        stored = store(record, alpha)
    except DocumentError as exc:
        _unreadable(exc)
    except IntervalError as exc:
        click.echo(f"reprogate interval: {exc}; record left unchanged", err=True)
        sys.exit(int(ExitCode.FAILED))
    click.echo(f"{record}: {100 - stored['alpha'] * 100:g}% prediction interval [{stored['low']:.6g}, {stored['high']:.6g}] from n={stored['n']} seeds (mean {stored['mean']:.6g}, sd {stored['sd']:.3g})")


@main.command()
@click.argument("reference", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("rebuilt", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--tolerance", "tolerance", nargs=2, type=float, default=None, metavar="ABS REL", help="Compare losses within |a-b| <= ABS + REL*|b| (default: exactly).")
@click.option("--tensors", default="model_state", show_default=True, help="Comma-separated tensors compared bitwise (empty: none).")
@click.option("--first", type=int, default=1, show_default=True, help="First step compared.")
@click.option("--last", type=int, default=None, help="Last step compared (default: all).")
def compare(reference: Path, rebuilt: tuple[Path, ...], tolerance: tuple[float, float] | None, tensors: str, first: int, last: int | None) -> None:
    """Compare a reference trace with a new trace (one file, or one per rank)."""
    from reprogate.rebuild.command import compare_traces

    code, lines = compare_traces(reference, list(rebuilt), tolerance, [t for t in tensors.split(",") if t], first, last)
    _finish(code, lines)


@main.command()
@click.argument("verdict", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True, help="Output form.")
def report(verdict: Path, fmt: str) -> None:
    """Render a verdict as Markdown or JSON with its bounded claim."""
    import json

    from reprogate.rebuild.report import render

    try:
        data = json.loads(verdict.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        click.echo(f"{verdict}: cannot read the verdict: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    if not isinstance(data, dict) or data.get("kind") != "Verdict":
        click.echo(f"{verdict}: not a reprogate verdict (kind: Verdict)", err=True)
        sys.exit(int(ExitCode.USAGE))
    click.echo(render(data, fmt), nl=False)
    sys.exit(0 if data.get("verdict") == "pass" else int(ExitCode.FAILED))


@main.command()
@click.option("--base", default=None, help="Base revision (the pull request's base).")
@click.option("--head", default="HEAD", show_default=True, help="Head revision.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."), show_default=True, help="The repository.")
@click.option("--files-from", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="A pull request's file list as GitHub's API returns it, when no clone is at hand.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="The .reprogate.yaml to use (default: found from --repo upward).")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def detect(base: str | None, head: str, repo: Path, files_from: Path | None, config_path: Path | None, fmt: str) -> None:
    """Report which watched layers a diff changes, and how."""
    from reprogate.core.config import from_data, load_config
    from reprogate.detect import output
    from reprogate.detect.git import DetectError
    from reprogate.detect.run import detect as run, detect_files
    from reprogate.core.documents import DocumentError, load_document

    try:
        config = from_data(load_document(config_path).data, config_path) if config_path else load_config(repo)
        if files_from is not None:
            result = detect_files(files_from, config)
        elif base is None:
            raise DetectError("give --base REF (and --head), or --files-from FILE")
        else:
            result = run(repo, base, head, config)
    except DocumentError as exc:
        _unreadable(exc, ExitCode.USAGE)
    except DetectError as exc:
        click.echo(f"reprogate detect: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    click.echo({"text": output.text, "json": output.as_json, "github": output.github}[fmt](result), nl=False)


@main.group()
def image() -> None:
    """Resolve and verify container images by digest over the registry API."""


@image.command("resolve")
@click.argument("refs", nargs=-1, required=True)
@click.option("--platform", default=None, help="For a multi-platform index, also resolve this platform's manifest (e.g. linux/amd64).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries on 429, 5xx and connection errors.")
def image_resolve(refs: tuple[str, ...], platform: str | None, fmt: str, timeout: float, retries: int) -> None:
    """Print the manifest digest(s) a reference resolves to."""
    from reprogate.image_commands import resolve_command
    from reprogate.images import RegistryClient

    code, lines = resolve_command(list(refs), platform, fmt, RegistryClient(timeout=timeout, retries=retries))
    _finish(code, lines)


@image.command("verify")
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--pull", is_flag=True, help="Also pull by digest through the Docker engine and confirm RepoDigests.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries on 429, 5xx and connection errors.")
def image_verify(record: Path, pull: bool, timeout: float, retries: int) -> None:
    """Check that a record's pinned image and base images still exist."""
    from reprogate.image_commands import verify_record
    from reprogate.images import RegistryClient

    code, lines = verify_record(record, pull, RegistryClient(timeout=timeout, retries=retries))
    _finish(code, lines)


@main.group()
def dockerfile() -> None:
    """Dockerfile helpers."""


@dockerfile.command("pins")
@click.argument("path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--write", is_flag=True, help="Rewrite literal FROM references to image:tag@sha256:... (atomically, comments kept).")
def dockerfile_pins(path: Path, write: bool) -> None:
    """List each FROM with the digest it resolves to."""
    from reprogate.image_commands import dockerfile_pins as run

    code, lines = run(path, write)
    _finish(code, lines)


@main.command()
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."), show_default=True, help="The checked-out repository (fetch-depth: 0).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="The .reprogate.yaml (default: found from --repo upward).")
@click.option("--format", "fmt", type=FORMATS, default="github", show_default=True, help="Output format.")
def gate(repo: Path, config_path: Path | None, fmt: str) -> None:
    """Pull-request flow: validate, detect, dispatch, pending status."""
    from reprogate.github.commands import gate_command

    code, lines = gate_command(repo, config_path, fmt)
    _finish(code, lines)


@main.group()
def github() -> None:
    """Single GitHub operations: status, dispatch, comment (token from GITHUB_TOKEN)."""


@github.command("status")
@click.option("--state", type=click.Choice(["pending", "success", "failure", "error"]), default=None, help="The state to post (or derive it with --from-verdict).")
@click.option("--from-verdict", "verdict", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Post the terminal state of a rebuild verdict (error if the file is missing: the rebuild never finished).")
@click.option("--description", default="", help="Status text (cut to GitHub's 140 characters).")
@click.option("--context", default=None, help="Status context (default from .reprogate.yaml: reprogate/reproduction).")
@click.option("--sha", default=None, help="Commit (default GITHUB_SHA).")
@click.option("--target-url", default=None, help="Link from the status (default: this workflow run).")
@click.option("--comment-report", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also upsert this Markdown report as the PR comment (needs --pr).")
@click.option("--pr", type=int, default=None, help="Pull request number for --comment-report.")
def github_status(state: str | None, verdict: Path | None, description: str, context: str | None, sha: str | None, target_url: str | None, comment_report: Path | None, pr: int | None) -> None:
    """Set a commit status (and optionally the report comment)."""
    from reprogate.github.commands import status_command

    code, lines = status_command(state, verdict, description, context, sha, target_url, comment_report, pr)
    _finish(code, lines)


@github.command("dispatch")
@click.option("--workflow", required=True, help="Workflow file name or id.")
@click.option("--ref", required=True, help="Branch to run the workflow definition from (use the default branch).")
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Workflow input (repeatable, at most 25).")
def github_dispatch(workflow: str, ref: str, inputs: tuple[str, ...]) -> None:
    """Dispatch a workflow and print the run's URL when GitHub returns it."""
    from reprogate.github.commands import dispatch_command

    code, lines = dispatch_command(workflow, ref, list(inputs))
    _finish(code, lines)


@github.command("comment")
@click.option("--pr", type=int, required=True, help="Pull request number.")
@click.option("--body-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), required=True, help="Markdown body.")
@click.option("--marker", default="<!-- reprogate:gate -->", show_default=True, help="Hidden marker that finds the comment again.")
def github_comment(pr: int, body_file: Path, marker: str) -> None:
    """Create or update the one reprogate comment on a pull request."""
    from reprogate.github.commands import comment_command

    code, lines = comment_command(pr, body_file, marker)
    _finish(code, lines)


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True, help="Retries per request.")
def audit(paths: tuple[str, ...], timeout: float, retries: int) -> None:
    """Retention review: do addressed artifacts still resolve?"""
    from reprogate.audit import audit as run
    from reprogate.validate.runner import Options, validate

    report = validate(list(paths), Options())
    records = [Path(f.path) for f in report.files if f.kind == "RunRecord"]
    for problem in report.problems:
        click.echo(f"{problem.path}: {problem.message}", err=True)
    if report.problems and not records:
        sys.exit(int(ExitCode.USAGE))
    result = run(records, timeout=timeout, retries=retries)
    for line in result.lines:
        click.echo(line)
    sys.exit(int(result.code))


@main.group()
def dataset() -> None:
    """Build, verify or import dataset manifests (shards by size and checksum)."""


LARGE_MANIFEST = 100_000  # shards beyond which a YAML or JSON manifest is slow to read back


@dataset.command("manifest")
@click.argument("root", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest file to write (atomically): .jsonl (JSON Lines, for large datasets), .json or .yaml.")
@click.option("--include", multiple=True, help="Glob of files to take (repeatable; default all). Without / it matches names at any depth.")
@click.option("--exclude", multiple=True, help="Glob of files to leave out (repeatable).")
@click.option("--algorithm", type=click.Choice(["sha256", "blake3"]), default="sha256", show_default=True, help="blake3 needs the blake3 extra.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Hashing threads (default: number of cores).")
@click.option("--id", "manifest_id", default=None, help="Dataset id (default: --base's id, else the folder name).")
@click.option("--version", "manifest_version", default=None, help="Dataset version.")
@click.option("--namespace", default=None, help="Where the shards live for readers (s3://..., https://..., a folder).")
@click.option("--file", "side_files", multiple=True, metavar="ROLE=PATH", help="A side file under ROOT, e.g. tokenizer=tok/tokenizer.json (repeatable).")
@click.option("--base", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="Previous manifest whose hand-written fields (split, filtering, retention...) are kept.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def dataset_manifest(root: Path, output: Path, include: tuple[str, ...], exclude: tuple[str, ...], algorithm: str, jobs: int | None, manifest_id: str | None, manifest_version: str | None, namespace: str | None, side_files: tuple[str, ...], base: Path | None, quiet: bool) -> None:
    """Hash every shard under ROOT and write a manifest."""
    from reprogate.datasets.build import BuildError, BuildOptions, build_manifest
    from reprogate.datasets.hashing import AlgorithmUnavailable
    from reprogate.datasets.manifests import load_manifest
    from reprogate.core.documents import DocumentError

    pairs = []
    for item in side_files:
        role, sep, name = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: write ROLE=PATH", param_hint="--file")
        pairs.append((role, name))
    try:
        base_data = load_manifest(base).data if base else {}
        options = BuildOptions(root, output, list(include), list(exclude), algorithm, jobs, quiet, manifest_id, manifest_version, namespace, pairs, base_data if isinstance(base_data, dict) else {})
        built = build_manifest(options)
    except DocumentError as exc:
        _unreadable(exc)
    except AlgorithmUnavailable as exc:
        click.echo(f"reprogate dataset manifest: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    except BuildError as exc:
        click.echo(f"reprogate dataset manifest: {exc}; nothing written", err=True)
        sys.exit(int(ExitCode.FAILED))
    click.echo(f"wrote {output}: {built.shards:,} shard(s), {built.bytes:,} bytes, digest {built.digest}")
    if built.form != "jsonl" and built.shards > LARGE_MANIFEST:
        click.echo(f"hint: for {built.shards:,} shards write a .jsonl manifest (JSON Lines): verify and validate then read it in constant memory", err=True)


@dataset.command("verify")
@click.argument("manifest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--root", default=None, help="Folder or http(s) URL the shard names are relative to (default: the manifest's namespace, else its folder).")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Hashing threads (default: number of cores).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Seconds to wait for a remote before retrying.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries for a remote that fails or does not answer.")
@click.option("--keep-going", is_flag=True, help="Compute checksums even when sizes already differ.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def dataset_verify(manifest: Path, root: str | None, fmt: str, jobs: int | None, timeout: float, retries: int, keep_going: bool, quiet: bool) -> None:
    """Check shards against a manifest: sizes first, then checksums."""
    from reprogate.datasets.verify import VerifyOptions, verify
    from reprogate.output.findings import render_verify

    report = verify(manifest, VerifyOptions(root, jobs, quiet, timeout, retries, keep_going))
    render_verify(report, fmt, click.echo)
    sys.exit(int(report.exit_code))


@dataset.command("from-dvc")
@click.argument("dvc_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest file to write (atomically).")
@click.option("--id", "manifest_id", default=None, help="Dataset id (default: the .dvc file's stem or the dvc.lock's folder).")
def dataset_from_dvc(dvc_file: Path, output: Path, manifest_id: str | None) -> None:
    """Make a manifest from DVC's dvc.lock or FILE.dvc, without re-hashing."""
    from reprogate.datasets.build import write_manifest
    from reprogate.datasets.dvc import DvcError, from_dvc
    from reprogate.core.documents import DocumentError

    try:
        result = from_dvc(dvc_file, output, manifest_id)
    except DocumentError as exc:
        _unreadable(exc)
    except DvcError as exc:
        click.echo(f"reprogate dataset from-dvc: {exc}; nothing written", err=True)
        sys.exit(int(ExitCode.FAILED))
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    write_manifest(result.manifest, output, f"reprogate dataset from-dvc {dvc_file.name}")
    click.echo(f"wrote {output}: {len(result.manifest['shards'])} output(s) from {dvc_file}, digest {result.manifest['digest']}")
