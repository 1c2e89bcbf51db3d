// Lints each workflow file named on the command line with actionlint's WebAssembly build and
// prints its findings as one JSON list ({path, line, column, kind, message}). The build reads
// no actionlint.yaml: tests/workflows/test_actionlint.py applies the repository's settings.
"use strict";
const fs = require("fs");
const path = require("path");

const pkg = path.join(__dirname, "node_modules", "@tktco", "node-actionlint");

async function main() {
  globalThis.throwError = (msg) => { throw new Error(msg); };  // the Go side reports through it
  require(path.join(pkg, "wasm_exec.js"));
  const go = new globalThis.Go();
  const { instance } = await WebAssembly.instantiate(fs.readFileSync(path.join(pkg, "main.wasm")), go.importObject);
  go.run(instance);
  const findings = [];
  for (const file of process.argv.slice(2)) {
    for (const r of globalThis.runActionlint(fs.readFileSync(file, "utf8"), file)) {
      if (r.message) findings.push({ path: file, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  process.stdout.write(JSON.stringify(findings) + "\n");
}

main().then(() => process.exit(0), (err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(2); });
