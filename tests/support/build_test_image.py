"""Build the container images the tests run training code in, without pulling anything.

Nothing can be pulled from an outside registry at test time, so the image is assembled here from
this machine's own parts: the Python interpreter that runs this script (same version as the
project's virtual environment, so wheels installed from the host match it), the shared libraries
`ldd` says it and the installed extensions need, a shell (dash) and a few coreutils so entrypoints
can run, and a virtual environment at /opt/venv filled by pip (which finds the CPU torch wheel
through its configured find-links).

Two variants, sharing the same base layer:
  - ``tiny``  — Python, shell, /opt/venv with pyyaml: for fast tests of the container plumbing.
  - ``torch`` — the same plus torch (CPU), numpy: for tests that train or run gloo collectives.

The result is cached under ``.ci/cache/test-images/<variant>-<key>/`` (``key`` hashes every input:
this script, the interpreter, the requirement pins): ``oci/``, an OCI image layout with gzip layers
that skopeo pushes as they are, ``store/``, the image already extracted into a containers-storage
folder that test engines mount read-only, and ``image.json``, what the tests need to know. A second
call with the same inputs returns the cached image in milliseconds; `.ci/run` builds both in the
background while the project installs, and the test fixtures wait for that build (file lock). Files get a fixed mtime and owner and bytecode is compiled
with ``unchecked-hash`` so the layers do not carry the build's clock (and a container never
recompiles the standard library or torch at startup).

Usage (also what `.ci/run` does):
    python tests/support/build_test_image.py [--variant tiny|torch|all] [--cache DIR] [--force]
It prints one JSON line per image: reference tag, manifest digest, sizes, build seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_CACHE = REPO / ".ci" / "cache" / "test-images"
VENV = "/opt/venv"
FIXED_MTIME = 946684800  # 2000-01-01: layers carry no build clock
REPOSITORY = "reprogate-test"  # images are tagged <registry>/reprogate-test/<variant>

# What each variant installs into /opt/venv (pinned: the cache key covers them).
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "tiny": ("pyyaml==6.0.4",),
    "torch": ("torch==2.13.0", "numpy==2.4.6", "pyyaml==6.0.4"),
}
# Modules whose bytecode (with that of everything they import from the venv) ships in the image,
# so a container does not recompile torch on every start; the rest compiles lazily in the container.
IMPORTS: dict[str, tuple[str, ...]] = {
    "tiny": ("yaml",),
    "torch": ("yaml", "numpy", "torch", "torch.distributed", "torch.distributed.run", "torch.multiprocessing"),
}
# Small tools entrypoints and tests expect next to /bin/sh.
COREUTILS = ("env", "cat", "ls", "mkdir", "rm", "cp", "mv", "sleep", "true", "false", "id", "uname", "touch", "head", "tail", "wc", "hostname")
# Parts of the standard library no test or training script needs (tests, GUI, static library).
STDLIB_SKIP = {"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo", "ensurepip"}
STDLIB_SKIP_PREFIX = ("config-",)


@dataclass
class BuiltImage:
    """A cached image: an OCI layout on disk and what the tests need to know about it.

    ``layout``/``tag`` name it for skopeo (``oci:{layout}:{tag}``); ``manifest_digest`` is the
    digest a registry serves it under after ``skopeo copy`` (layers are already compressed, so
    skopeo copies them as they are); ``config_digest`` is the image ID an engine reports;
    ``python`` is the interpreter on the image's PATH (``/opt/venv/bin/python``); ``store`` a
    read-only containers-storage folder holding the image extracted (see `_seed_store`)."""

    variant: str
    key: str
    layout: str
    tag: str
    manifest_digest: str
    config_digest: str
    compressed_bytes: int
    uncompressed_bytes: int
    build_seconds: float
    python: str
    python_version: str
    packages: dict[str, str]
    store: str | None = None

    @property
    def repository(self) -> str:
        return f"{REPOSITORY}/{self.variant}"


def cache_key(variant: str) -> str:
    """Hash of every input that changes the image: this file, the interpreter, the pins."""
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update(sys.version.encode())
    digest.update(str(Path(sys._base_executable).resolve()).encode())  # type: ignore[attr-defined]
    digest.update("\n".join(REQUIREMENTS[variant]).encode())
    return digest.hexdigest()[:16]


def build(variant: str, cache: Path = DEFAULT_CACHE, force: bool = False) -> BuiltImage:
    """The cached image for `variant`, built first if the cache lacks this key (or `force`).
    Holds a file lock meanwhile: a second caller (the test fixture while `.ci/run` builds in the
    background, or another session) waits, then finds the image in the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{variant}.lock", "w") as lock:
        import fcntl  # here, not at the top: conftest imports this module on Windows too (the core tests)

        fcntl.flock(lock, fcntl.LOCK_EX)
        return _cached_or_built(variant, cache, force)


def _cached_or_built(variant: str, cache: Path, force: bool) -> BuiltImage:
    key = cache_key(variant)
    target = cache / f"{variant}-{key}"
    summary = target / "image.json"
    if summary.exists() and not force:
        return BuiltImage(**json.loads(summary.read_text()))
    started = time.monotonic()
    _delete(target)
    work = _work_folder(cache, variant)
    clock = [started]
    print(f"building test image {variant} ({key}) in {work}", file=sys.stderr, flush=True)
    try:
        built = _build(variant, key, work, target, clock)
        built.store = _seed_store(built, work)
        _phase("read-only store", clock)
    finally:
        _delete(work)
        _phase("cleanup", clock)
    built.build_seconds = round(time.monotonic() - started, 1)
    summary.write_text(json.dumps(asdict(built), indent=1))
    for stale in cache.glob(f"{variant}-*"):
        if stale != target:
            _delete(stale)
    return built


def _work_folder(cache: Path, variant: str) -> Path:
    """Scratch space for the root filesystems and uncompressed layers (~2 GB for torch): on tmpfs
    when it has room, because creating and deleting torch's 15 000 files on the test machines' disk
    takes minutes; else next to the cache."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4 << 30:
        return Path(tempfile.mkdtemp(prefix=f"reprogate-test-image-{variant}-", dir=shm))
    return Path(tempfile.mkdtemp(prefix=f".work-{variant}-", dir=cache))


def _seed_store(built: BuiltImage, work: Path) -> str | None:
    """Extract the image once into a containers-storage folder next to its layout. Engines list it
    under ``additionalimagestores`` (read-only), so a session's pull by digest still asks the
    registry for the manifest but finds every layer present and writes nothing: extracting, and
    later deleting, torch's files took ~1.5 min per session. Returns the store's path, or None where
    it cannot be made (overlay needs root): engines then pull the layers for real."""
    store = Path(built.layout).parent / "store"
    destination = f"containers-storage:[overlay@{store}+{work / 'store-run'}]localhost/{built.repository}:{built.tag}"
    done = subprocess.run(["skopeo", "copy", "-q", f"oci:{built.layout}:{built.tag}", destination], check=False, capture_output=True, text=True)
    _unmount_under(store)
    _unmount_under(work)
    if done.returncode != 0:
        print(f"no read-only image store for {built.variant} (engines will pull for real): {done.stderr.strip()[-500:]}", file=sys.stderr)
        _delete(store)
        return None
    return str(store)


def _unmount_under(folder: Path) -> None:
    """Lazily unmount what containers-storage left mounted under `folder` (its overlay home)."""
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for point in sorted((p for p in points if Path(p).is_relative_to(folder)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def _delete(folder: Path) -> None:
    if folder.exists():
        _unmount_under(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _phase(name: str, started: list[float]) -> None:
    now = time.monotonic()
    print(f"  {name}: {now - started[0]:.1f} s", file=sys.stderr, flush=True)
    started[0] = now


def _build(variant: str, key: str, work: Path, target: Path, clock: list[float]) -> BuiltImage:
    base_root, venv_root = work / "base", work / "venv"
    python = _base_layer(base_root)
    _phase("base layer", clock)
    packages = _venv_layer(venv_root, base_root, python, variant, clock)
    raw = work / "raw-layout"
    layers = [_tar(base_root, work / "base.tar"), _tar(venv_root, work / "venv.tar")]
    _phase("tar", clock)
    diff_ids = [f"sha256:{_sha256_file(layer)}" for layer in layers]
    _phase("sha256", clock)
    uncompressed = sum(layer.stat().st_size for layer in layers)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "2000-01-01T00:00:00Z",
        "config": {
            "Env": [f"PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin", f"VIRTUAL_ENV={VENV}", "LANG=C.UTF-8"],
            "Cmd": ["python"],
            "WorkingDir": "/",
            "Labels": {"org.opencontainers.image.title": f"reprogate test image ({variant})", "reprogate.test.key": key},
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": "2000-01-01T00:00:00Z", "created_by": f"tests/support/build_test_image.py {name}"} for name in ("base", variant)],
    }
    _raw_layout(raw, key, list(zip(layers, diff_ids, strict=True)), config)
    # skopeo compresses the layers (parallel gzip) into the layout the registry will serve as is.
    layout = target / "oci"
    layout.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["skopeo", "copy", "-q", f"oci:{raw}:{key}", f"oci:{layout}:{key}"], check=True, capture_output=True)
    _phase("compress (skopeo)", clock)
    index = json.loads((layout / "index.json").read_text())
    manifest_digest = index["manifests"][0]["digest"]
    manifest = json.loads((layout / "blobs" / "sha256" / manifest_digest.split(":")[1]).read_bytes())
    return BuiltImage(
        variant=variant,
        key=key,
        layout=str(layout),
        tag=key,
        manifest_digest=manifest_digest,
        config_digest=manifest["config"]["digest"],
        compressed_bytes=sum(layer["size"] for layer in manifest["layers"]),
        uncompressed_bytes=uncompressed,
        build_seconds=0.0,
        python=f"{VENV}/bin/python",
        python_version=sys.version.split()[0],
        packages=packages,
    )


# --- base layer: interpreter, its libraries, a shell --------------------------------------------


def _base_layer(root: Path) -> str:
    """Copy the interpreter, its standard library and every library they link into `root` at the
    same absolute paths as on this machine (so the interpreter's own prefix, RPATH and landmark
    search work unchanged). Returns the interpreter's path inside the image."""
    exe = Path(sys._base_executable).resolve()  # type: ignore[attr-defined]
    stdlib = Path(sysconfig.get_path("stdlib"))
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    for top in ("bin", "lib", "lib64", "sbin"):  # merged-/usr symlinks, as the host has them
        if Path("/", top).is_symlink():
            (root / top).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(Path("/", top)), root / top)
    _mirror(root, exe)
    _copy_tree(stdlib, root / stdlib.relative_to("/"), skip=STDLIB_SKIP, skip_prefix=STDLIB_SKIP_PREFIX)
    if not dynload.is_relative_to(stdlib):
        _copy_tree(dynload, root / dynload.relative_to("/"), skip=set(), skip_prefix=())
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent")
    for shared in libdir.glob("libpython3*.so*"):
        _mirror(root, shared)
    shell = shutil.which("busybox") or shutil.which("dash")
    if shell is None:
        raise SystemExit("neither busybox nor dash found: the image needs a /bin/sh")
    binaries = [exe, Path(shell).resolve(), *(Path(found).resolve() for tool in COREUTILS if (found := shutil.which(tool)))]
    for binary in binaries:
        _mirror(root, binary)
    usr_bin = root / "usr" / "bin"
    usr_bin.mkdir(parents=True, exist_ok=True)
    (usr_bin / "sh").unlink(missing_ok=True)
    os.symlink(Path(shell).resolve(), usr_bin / "sh")
    if not (root / "bin").is_symlink():
        (root / "bin").mkdir(exist_ok=True)
        os.symlink(Path(shell).resolve(), root / "bin" / "sh")
    local_bin = root / "usr" / "local" / "bin"
    local_bin.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "python"):
        os.symlink(exe, local_bin / name)
    _libraries(root, [*binaries, *dynload.glob("*.so")])
    _etc(root)
    # The whole standard library is compiled (a few seconds), so this layer is the same for every variant.
    compile_all = [sys.executable, "-m", "compileall", "-q", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", "-s", str(root), "-p", "/"]
    subprocess.run([*compile_all, str(root / stdlib.relative_to("/"))], check=False, capture_output=True)
    return str(exe)


def _etc(root: Path) -> None:
    """Users, groups, loader cache and OS identity; /tmp and /root as a distribution has them."""
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    (etc / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
    for name in ("ld.so.cache", "os-release"):
        if Path("/etc", name).exists():
            _mirror(root, Path("/etc", name))
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "root").mkdir(mode=0o700, exist_ok=True)


def _mirror(root: Path, path: Path) -> None:
    """Recreate `path` under `root`: its folders, every symlink on the way (then what it points
    to), and the file itself, so the loader and the interpreter find them where they do here."""
    path = Path(os.path.abspath(path))
    current = Path("/")
    last = len(path.parts) - 1
    for index, part in enumerate(path.parts[1:], start=1):
        current = current / part
        inside = root / current.relative_to("/")
        if current.is_symlink():
            if not inside.is_symlink() and not inside.exists():
                inside.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(current), inside)
            target = Path(os.path.normpath(os.path.join(current.parent, os.readlink(current))))
            _mirror(root, target.joinpath(*path.parts[index + 1 :]))
            return
        if index == last:
            if not inside.exists():
                inside.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(current, inside)
            return
        inside.mkdir(parents=True, exist_ok=True)


def _copy_tree(source: Path, target: Path, skip: set[str], skip_prefix: tuple[str, ...]) -> None:
    def ignore(_folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in skip or n.startswith(skip_prefix) or n.endswith(".pyc") or n.startswith("_tkinter")}

    shutil.copytree(source, target, symlinks=True, ignore=ignore, dirs_exist_ok=True)


_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def _libraries(root: Path, objects: list[Path], present: Path | None = None) -> None:
    """Mirror every shared library `ldd` resolves for `objects` (in batches) into `root`, except
    those already under `present` (the base layer, when `root` is the venv layer)."""
    needed: set[str] = set()
    files = [str(o) for o in objects if o.is_file()]
    for start in range(0, len(files), 200):
        done = subprocess.run(["ldd", *files[start : start + 200]], check=False, capture_output=True, text=True)
        for line in done.stdout.splitlines():
            if "not found" in line:
                raise SystemExit(f"ldd: a library is missing on this machine: {line.strip()}")
            found = _LDD_LINE.search(line)
            if found:
                needed.add(found.group(1))
    for library in sorted(needed):
        if Path(library).is_relative_to(root.parent):
            continue  # a wheel's own bundled library (torch/lib, numpy.libs), found through its RPATH
        if not (root / library.lstrip("/")).exists() and not (present and (present / library.lstrip("/")).exists()):
            _mirror(root, Path(library))


# --- venv layer ----------------------------------------------------------------------------------


def _venv_layer(root: Path, base_root: Path, python: str, variant: str, clock: list[float]) -> dict[str, str]:
    """A virtual environment at /opt/venv for the image's interpreter, filled by this machine's pip.

    pip runs here (same interpreter version as the image), installs into the venv's
    site-packages with ``--target``; console scripts get ``#!/opt/venv/bin/python``. Bytecode is
    compiled for the modules a run loads (see `_compile_what_imports_load`). Returns {distribution: version}."""
    venv = root / VENV.lstrip("/")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    os.symlink("lib", venv / "lib64")
    (venv / "bin").mkdir()
    for name in (version, "python3", "python"):
        os.symlink(python, venv / "bin" / name)
    (venv / "pyvenv.cfg").write_text(
        f"home = {Path(python).parent}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n"
        f"executable = {python}\ncommand = {python} -m venv {VENV}\n"
    )
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--only-binary", ":all:", "--no-warn-script-location"]
    requirements = REQUIREMENTS[variant]
    done = subprocess.run([*pip, "--target", str(site), *requirements], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip could not install {' '.join(requirements)} for the test image:\n{done.stderr[-3000:]}")
    _phase("pip install", clock)
    scripts = site / "bin"
    if scripts.is_dir():
        for script in scripts.iterdir():
            text = script.read_bytes()
            if text.startswith(b"#!"):
                text = b"#!" + f"{VENV}/bin/python".encode() + text[text.index(b"\n") :]
            (venv / "bin" / script.name).write_bytes(text)
            (venv / "bin" / script.name).chmod(0o755)
        shutil.rmtree(scripts)
    # System libraries the wheels link (torch: libstdc++, libgcc_s, ...) go into this layer, so the
    # base layer is the same for every variant and an engine or registry stores it once.
    _libraries(root, [path for path in site.rglob("*.so*") if path.is_file() and not path.is_symlink()], present=base_root)
    packages: dict[str, str] = {}
    for dist_info in sorted(site.glob("*.dist-info")):
        name, _, rest = dist_info.name[: -len(".dist-info")].partition("-")
        packages[name.lower().replace("_", "-")] = rest
        (dist_info / "direct_url.json").unlink(missing_ok=True)
    _compile_what_imports_load(root, site, IMPORTS[variant])
    _phase("compile bytecode", clock)
    return packages


_PROBE = (
    "import importlib, json, sys; sys.path.insert(0, sys.argv[1]); [importlib.import_module(m) for m in sys.argv[2:]]; "
    "print(json.dumps(sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)})))"
)


def _compile_what_imports_load(venv_root: Path, site: Path, modules: tuple[str, ...]) -> None:
    """Byte-compile the venv's files that importing `modules` loads, recording the paths the
    container sees. Compiling whole trees (sympy alone has 1500 files) took 40 s; the
    import set takes a few. ``unchecked-hash`` pycs stay valid whatever mtime the layer gives."""
    probe = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE, str(site), *modules], check=False, capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"the test image's packages do not import: {probe.stderr[-3000:]}")
    image_site = Path("/") / site.relative_to(venv_root)
    for loaded in map(Path, json.loads(probe.stdout)):
        if loaded.suffix != ".py":
            continue
        if loaded.is_relative_to(site):
            cfile = importlib.util.cache_from_source(str(loaded))
            shown = image_site / loaded.relative_to(site)
            py_compile.compile(str(loaded), cfile=cfile, dfile=str(shown), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)


# --- OCI layout ----------------------------------------------------------------------------------


def _tar(root: Path, target: Path) -> Path:
    """An uncompressed layer: names sorted, owner root, one fixed mtime, hard links kept."""

    def normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = FIXED_MTIME
        return info

    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as tar:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            here = Path(folder)
            for name in sorted([*dirs, *files]):
                path = here / name
                tar.add(path, arcname=str(path.relative_to(root)), recursive=False, filter=normalize)
    return target


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _raw_layout(layout: Path, tag: str, layers: list[tuple[Path, str]], config: dict[str, object]) -> None:
    """An OCI layout whose layers are the uncompressed tars (moved in), for skopeo to compress."""
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def blob_bytes(data: bytes) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    descriptors = []
    for layer, diff_id in layers:
        digest = diff_id.split(":")[1]
        os.replace(layer, blobs / digest)
        descriptors.append({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": f"sha256:{digest}", "size": (blobs / digest).stat().st_size})
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **blob_bytes(json.dumps(config, sort_keys=True).encode())},
        "layers": descriptors,
    }
    top = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **blob_bytes(json.dumps(manifest, sort_keys=True).encode())}
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [top]}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=[*REQUIREMENTS, "all"], default="all")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("REPROGATE_TEST_IMAGE_CACHE", DEFAULT_CACHE)))
    parser.add_argument("--force", action="store_true", help="rebuild even when the cache has this key")
    args = parser.parse_args(argv)
    for variant in REQUIREMENTS if args.variant == "all" else (args.variant,):
        print(json.dumps(asdict(build(variant, args.cache, args.force))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
