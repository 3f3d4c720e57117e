// The OpenProse extension: starts `prose lsp` for .prose files and talks LSP with it over
// stdio. Highlighting comes from the TextMate grammar (syntaxes/), which works without the
// server; the server adds diagnostics, completion, navigation and semantic colours.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const settings = vscode.workspace.getConfiguration("openprose.server");
  const server = {
    command: settings.get("command", "prose"),
    args: ["lsp", ...settings.get("extraArgs", [])],
  };
  client = new LanguageClient(
    "openprose",
    "OpenProse",
    { run: server, debug: server },
    { documentSelector: [{ language: "prose" }] },
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start().catch((error) => {
    vscode.window.showErrorMessage(
      `OpenProse: could not start \`${server.command} lsp\` (${error.message}). ` +
        "Install openprose with its [lsp] extra, or set openprose.server.command.",
    );
  });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
