"""Render a rebuild report as a reviewer sees it in a pull request: HTML at a comment's width,
the Mermaid charts drawn by mermaid.js, and a PNG screenshot from headless Chromium.

    tools/render_report VERDICT.json|REPORT.md [--out DIR] [--width 780] [--open]

A verdict file is rendered with `reprogate report`'s own code (reprogate.rebuild.report); a .md
file is taken as it is. Markdown becomes HTML through markdown-it (GitHub's comment Markdown:
tables, <details>, <sub>) and the charts are drawn by the `mermaid` npm package, both from the
npm folder .ci/run installs (.ci/npm, or --npm); the page loads nothing from the network. Writes
DIR/report.html and DIR/report.png (DIR/report-open.png too with --open: every <details>
unfolded) and prints one JSON line: the files, the charts drawn, each chart's x-axis labels and
width, and Mermaid's errors. Exit 0 when every chart was drawn, 1 when one was not, 2 when the
input or a tool (node, Chromium) is missing. tests/rebuild/test_report_chart.py runs it; its
result is meant to be looked at (docs/report.md).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reprogate.rebuild.report import markdown  # noqa: E402 - the checkout's own package, found by the line above
from reprogate.rebuild.verdicts import read_verdict  # noqa: E402

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rendering</title>
<style>
body {{ margin: 0; background: #fff; color: #1f2328; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }}
main {{ box-sizing: border-box; width: {width}px; padding: 16px; border: 1px solid #d1d9e0; border-radius: 6px; margin: 8px; }}
h2 {{ font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 0 0 16px; }}
h3 {{ font-size: 1.25em; margin: 24px 0 16px; }}
table {{ border-collapse: collapse; display: block; overflow: auto; max-width: 100%; margin: 0 0 16px; }}
th, td {{ border: 1px solid #d1d9e0; padding: 6px 13px; vertical-align: top; }}
tr:nth-child(2n) {{ background: #f6f8fa; }}
code {{ font: 85% ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3; padding: .2em .4em; border-radius: 6px; }}
pre {{ background: #f6f8fa; padding: 16px; overflow: auto; border-radius: 6px; }}
pre.mermaid {{ background: #fff; padding: 0; text-align: center; }}
summary {{ cursor: pointer; font-weight: 600; }}
p, ul, details {{ margin: 0 0 16px; }}
</style>
<script src="{mermaid}"></script>
</head><body><main>
{body}
</main>
<script>
(async () => {{
  const errors = [];
  {open_details}
  mermaid.initialize({{ startOnLoad: false, theme: "default", securityLevel: "strict" }});
  try {{ await mermaid.run({{ querySelector: "pre.mermaid", suppressErrors: false }}); }} catch (e) {{ errors.push(String(e && e.message || e)); }}
  const charts = [...document.querySelectorAll("pre.mermaid")].map((pre) => {{
    const svg = pre.querySelector("svg");
    return {{
      drawn: Boolean(svg) && !pre.textContent.includes("Syntax error"),
      x_labels: svg ? [...svg.querySelectorAll("g.bottom-axis g.label text")].map((t) => t.textContent) : [],
      width: svg ? Math.round(svg.getBoundingClientRect().width) : 0,
    }};
  }});
  document.title = JSON.stringify({{ charts, errors, height: Math.ceil(document.documentElement.scrollHeight) + 8 }});
}})();
</script>
</body></html>
"""


class _Title(HTMLParser):
    """The page's <title>, where the page's script leaves what it drew (as JSON)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.inside = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.text += data


def find_chromium() -> str | None:
    """CHROMIUM if set, else the first Chromium or Chrome on PATH."""
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def _chromium(binary: str, profile: Path, width: int, height: int, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",  # as root (CI containers) Chromium refuses its own sandbox; the page is our own file
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--allow-file-access-from-files",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--virtual-time-budget=20000",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


def page(report: str, npm: Path, width: int, open_details: bool) -> str:
    body = subprocess.run(
        ["node", str(ROOT / "tools" / "render_report.mjs"), str(npm)], input=report, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    mermaid_js = (npm / "node_modules" / "mermaid" / "dist" / "mermaid.min.js").resolve()
    return PAGE.format(
        width=width,
        body=body,
        mermaid=html.escape(mermaid_js.as_uri()),
        open_details='document.querySelectorAll("details").forEach((d) => { d.open = true; });' if open_details else "",
    )


def render(source: Path, out: Path, npm: Path, width: int = 780, open_details: bool = False) -> dict[str, object]:
    """Write out/report.html and out/report.png (and report-open.png); what was drawn, as a dict."""
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("no Chromium found (set CHROMIUM, or apt-get install chromium)")
    if not (npm / "node_modules" / "mermaid" / "dist" / "mermaid.min.js").is_file() or not (npm / "node_modules" / "markdown-it").is_dir():
        raise FileNotFoundError(f"{npm}: no mermaid or markdown-it in node_modules (.ci/run installs them)")
    report = markdown(read_verdict(source)) if source.suffix == ".json" else source.read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(report, encoding="utf-8")
    result: dict[str, object] = {"html": str(out / "report.html")}
    window = width + 16
    for name, unfolded in [("report", False)] + ([("report-open", True)] if open_details else []):
        target = out / f"{name}.html"
        target.write_text(page(report, npm, width, unfolded), encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="render-report-") as profile:
            dom = _chromium(binary, Path(profile), window, 800, "--dump-dom", target.as_uri())
            title = _Title()
            title.feed(dom.stdout)
            try:
                drawn = json.loads(title.text)
            except json.JSONDecodeError:
                raise RuntimeError(f"the page did not finish drawing (Chromium: {dom.stderr.strip()[-500:]})") from None
            png = out / f"{name}.png"
            shot = _chromium(binary, Path(profile), window, int(drawn["height"]), f"--screenshot={png}", target.as_uri())
            if not png.is_file():
                raise RuntimeError(f"Chromium wrote no screenshot: {shot.stderr.strip()[-500:]}")
        result[name] = {"png": str(png), **drawn}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render a rebuild report (a verdict JSON or a report.md) to HTML and a Chromium screenshot.")
    parser.add_argument("source", type=Path, help="verdict.json (rendered with reprogate's report code) or report.md")
    parser.add_argument("--out", type=Path, help="folder for report.html and report.png (default: next to SOURCE, report-render/)")
    parser.add_argument("--npm", type=Path, default=ROOT / ".ci" / "npm", help="npm folder holding mermaid and markdown-it (default: .ci/npm)")
    parser.add_argument("--width", type=int, default=780, help="content width in CSS pixels (default 780: a pull request comment's)")
    parser.add_argument("--open", action="store_true", help="also write report-open.png with every <details> unfolded")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        print(f"{args.source}: no such file", file=sys.stderr)
        return 2
    try:
        result = render(args.source, args.out or args.source.parent / "report-render", args.npm, args.width, args.open)
    except (FileNotFoundError, RuntimeError, subprocess.SubprocessError, ValueError, KeyError) as error:
        print(f"render_report: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    shots = [v for k, v in result.items() if k != "html" and isinstance(v, dict)]
    return 0 if all(chart["drawn"] for shot in shots for chart in shot["charts"]) and not any(shot["errors"] for shot in shots) else 1


if __name__ == "__main__":
    sys.exit(main())
