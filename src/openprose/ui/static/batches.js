// prose ui: batches. A batch is one entry (progress, failures, tokens, cost, its rows file)
// instead of thousands of flat runs; opening it lists its rows, filtered by status, each
// linking to its run. Uses app.js's helpers (el, clear, api, money, badge, $); all text is
// put in the document as text nodes.
"use strict";

const batchState = {batches: [], batchId: null, rowsStatus: ""};
const BATCH_POLL_MS = 2000; // while a batch is running
const BATCH_IDLE_TICKS = 5; // polls skipped while none is
const BATCH_ROWS_SHOWN = 1000; // rows drawn; the rows file holds them all

// A batch's run is named "{batch id}-{line}": the flat runs list leaves those out.
function isBatchRun(runId) {
  return batchState.batches.some((batch) => runId.startsWith(`${batch.batch_id}-`));
}

async function loadBatches() {
  const response = await api("/api/batches");
  if (!response.ok) return;
  batchState.batches = await response.json();
  renderBatchList();
  renderRuns();
  if (batchState.batchId) renderBatchHead();
}

function batchProgress(batch) {
  return batch.cases ? `${batch.done}/${batch.cases}` : `${batch.done}`;
}

function renderBatchList() {
  const list = clear($("batch-list"));
  $("batches-box").hidden = batchState.batches.length === 0;
  for (const batch of batchState.batches) {
    const selected = batch.batch_id === batchState.batchId;
    list.append(el(
      "li",
      {class: selected ? "selected" : "", dataset: {batch: batch.batch_id}},
      el("a", {href: `#batch=${encodeURIComponent(batch.batch_id)}`}, batch.batch_id),
      " ",
      badge(batch.state === "running" ? "running" : batch.failed ? "failed" : "done"),
      el("div", {class: "dim small"}, batch.program, " · ", batchProgress(batch),
        batch.failed ? ` · ${batch.failed} failed` : ""),
    ));
  }
}

function renderBatchHead() {
  const batch = batchState.batches.find((b) => b.batch_id === batchState.batchId);
  $("batch-id").textContent = batchState.batchId;
  if (!batch) {
    $("batch-meta").textContent = "no such batch";
    return;
  }
  $("batch-state").replaceWith(Object.assign(badge(batch.state || "running"), {id: "batch-state"}));
  $("batch-meta").textContent = `${batch.program} on ${batch.inputs}`;
  const facts = [
    ["progress", batchProgress(batch)],
    ["succeeded", batch.succeeded],
    ["failed", batch.failed],
    ["invalid", batch.invalid],
    ["tokens", `${batch.input_tokens} in / ${batch.output_tokens} out`],
    ["cost", batch.unpriced_models.length ? `unknown (no price for ${batch.unpriced_models.join(", ")})` : money(batch.cost_usd)],
    ["rows file", batch.rows_file],
  ];
  const totals = clear($("batch-totals"));
  for (const [name, value] of facts) totals.append(el("div", {}, el("dt", {}, name), el("dd", {}, String(value))));
}

async function loadBatchRows() {
  const id = batchState.batchId;
  const query = batchState.rowsStatus ? `?status=${encodeURIComponent(batchState.rowsStatus)}` : "";
  const response = await api(`/api/batches/${encodeURIComponent(id)}/rows${query}`);
  if (id !== batchState.batchId) return; // another batch was opened meanwhile
  const rows = response.ok ? await response.json() : [];
  const body = clear($("batch-rows").tBodies[0]);
  for (const row of rows.slice(0, BATCH_ROWS_SHOWN)) {
    const run = row.run_id ? el("a", {href: `#run=${encodeURIComponent(row.run_id)}`}, row.run_id) : "";
    const usage = row.usage || {};
    body.append(el(
      "tr",
      {dataset: {line: String(row.line)}},
      el("td", {class: "num"}, String(row.line)),
      el("td", {}, badge(row.status)),
      el("td", {}, run),
      el("td", {class: "num"}, usage.input_tokens === undefined ? "" : `${usage.input_tokens + usage.output_tokens}`),
      el("td", {}, row.error ? text(row.error) : text(row.outputs)),
    ));
  }
  $("batch-row-count").textContent = rows.length > BATCH_ROWS_SHOWN
    ? `${BATCH_ROWS_SHOWN} of ${rows.length} shown` : `${rows.length}`;
}

function selectBatchFromHash() {
  const match = /batch=([^&]+)/.exec(location.hash);
  batchState.batchId = match ? decodeURIComponent(match[1]) : null;
  $("batch-view").hidden = batchState.batchId === null;
  if (batchState.batchId === null) return;
  $("no-run").hidden = true; // app.js shows it when no run is chosen
  renderBatchList();
  renderBatchHead();
  loadBatchRows();
}

document.addEventListener("DOMContentLoaded", () => {
  $("batch-status").addEventListener("change", (event) => {
    batchState.rowsStatus = event.target.value;
    loadBatchRows();
  });
  window.addEventListener("hashchange", selectBatchFromHash);
  selectBatchFromHash();
  loadBatches();
  let ticks = 0;
  setInterval(() => {
    // often while a batch runs; now and then otherwise, to see a new one start
    const running = batchState.batches.some((b) => b.state === "running");
    if (!running && ++ticks % BATCH_IDLE_TICKS) return;
    loadBatches();
    if (running && batchState.batchId) loadBatchRows();
  }, BATCH_POLL_MS);
});
