// Our schemas as two JavaScript consumers see them: Ajv 2020 in strict mode, and the JSON
// language service VS Code validates documents with. Run by tests/test_schemas_in_editors.py.
//
//   node schema_in_editor.mjs NODE_MODULES ajv SCHEMA...        -> [{schema, error}] (error null: compiles)
//   node schema_in_editor.mjs NODE_MODULES editor SCHEMA DOC    -> {diagnostics: [{line, message}], requests: [uri]}
//
// NODE_MODULES is where npm installed the packages: ES modules ignore NODE_PATH, so they are
// loaded through createRequire from there. Lines are 1-based. The editor's schema requests are
// served from local files only, and every requested URI is reported, so the test can tell a
// schema that is self-contained from one that needs the network.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const [modules, mode, ...args] = process.argv.slice(2);
const require = createRequire(path.resolve(modules) + path.sep);

if (mode === "ajv") {
  const Ajv2020 = require("ajv/dist/2020.js").default;
  const addFormats = require("ajv-formats").default;
  const results = args.map((file) => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    try {
      ajv.compile(JSON.parse(fs.readFileSync(file, "utf8")));
      return { schema: path.basename(file), error: null };
    } catch (e) {
      return { schema: path.basename(file), error: String(e.message) };
    }
  });
  console.log(JSON.stringify(results));
} else if (mode === "editor") {
  const { getLanguageService, TextDocument } = require("vscode-json-languageservice");
  const [schemaFile, docFile] = args;
  const requests = [];
  const service = getLanguageService({
    schemaRequestService: async (uri) => {
      requests.push(uri);
      if (!uri.startsWith("file:")) throw new Error(`not served offline: ${uri}`);
      return fs.readFileSync(fileURLToPath(uri), "utf8");
    },
  });
  const schemaUri = pathToFileURL(path.resolve(schemaFile)).href;
  service.configure({ validate: true, allowComments: false, schemas: [{ uri: schemaUri, fileMatch: ["*.json"] }] });
  const text = fs.readFileSync(docFile, "utf8");
  const doc = TextDocument.create(pathToFileURL(path.resolve(docFile)).href, "json", 1, text);
  const diagnostics = await service.doValidation(doc, service.parseJSONDocument(doc));
  const out = diagnostics.map((d) => ({ line: d.range.start.line + 1, message: d.message, severity: d.severity }));
  console.log(JSON.stringify({ diagnostics: out, requests }));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
