// Markdown (stdin) to an HTML fragment (stdout) the way GitHub shows a comment: GFM tables,
// <details>, <sub>; a ```mermaid block becomes <pre class="mermaid"> for mermaid.js to draw.
// Used by tools/render_report.py; markdown-it comes from the npm folder given as argv[2].
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(path.resolve(process.argv[2]), "package.json"));
const MarkdownIt = require("markdown-it");
const md = new MarkdownIt({ html: true, linkify: false });
const escape = md.utils.escapeHtml;
const fence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  if (token.info.trim() === "mermaid") return `<pre class="mermaid">${escape(token.content)}</pre>\n`;
  return fence(tokens, idx, options, env, self);
};
process.stdout.write(md.render(readFileSync(0, "utf8")));
