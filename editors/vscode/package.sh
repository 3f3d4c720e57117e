#!/usr/bin/env bash
# Build the VS Code extension: editors/vscode/openprose.vsix (install it with
# `code --install-extension editors/vscode/openprose.vsix`). Needs Node.js 18+ and npm; the
# packages come from package-lock.json (npm ci), the grammar's tests run first.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run --silent test:grammar
npx vsce package --out openprose.vsix
echo "built $(pwd)/openprose.vsix"
