// prose ui: the page. Everything that comes from a run is put in the document as text
// (textContent, text nodes, attributes set one by one) — never parsed as HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const SESSION_ROWS = 500; // rows of the sessions table drawn before "show all"

const state = {
  runs: [],
  runId: null,
  stream: null,
  run: null, // the run's header
  programText: "",
  statements: [],
  sessions: new Map(), // step -> summary
  decisions: new Map(), // n -> record (the same for the lists below)
  errors: new Map(),
  toolCalls: new Map(),
  permissions: new Map(),
  approvals: new Map(),
  pending: [],
  questions: [], // every `ask` of the run; those with no answer get a form
  damaged: [],
  showAllSessions: false,
  detailStep: null,
  detailVersion: -1,
};

const $ = (id) => document.getElementById(id);

// Characters that act or hide instead of showing, written as escapes (as the command lines
// do, cliconventions/terminal.py): C0 and C1 controls, DEL, Unicode format characters
// (bidi overrides and isolates such as U+202E, zero-width characters, tags), line and
// paragraph separators. HIDDEN keeps newline and tab; HIDDEN_ON_ONE_LINE escapes them too.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu;
const HIDDEN_ON_ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu;
const NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"};

function escapeOne(char) {
  if (NAMED_ESCAPES[char]) return NAMED_ESCAPES[char];
  const code = char.codePointAt(0);
  const hex = code.toString(16);
  if (code < 0x100) return `\\x${hex.padStart(2, "0")}`;
  return code < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
}

// Text as a person should see it: nothing hidden, nothing reordered.
function shownText(value) {
  return String(value).replace(HIDDEN, escapeOne);
}

// An action to approve (a command, a path, a URL) on one line, exactly as it will run.
function oneLine(value) {
  return text(value).replace(HIDDEN_ON_ONE_LINE, escapeOne);
}

// el("td", {class: "x", title: t}, child...) — strings become text nodes, shown escaped.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, shownText(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(shownText(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function api(path, options = {}) {
  const headers = Object.assign({"X-Prose-Token": token}, options.headers || {});
  return fetch(path, Object.assign({}, options, {headers}));
}

function text(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 10 ? `${value.toFixed(2)}s` : `${value.toFixed(1)}s`;
}

function money(value) {
  if (value === null || value === undefined) return "—";
  if (value === 0) return "free";  // the local model, or a model priced at 0 (as `prose run` says)
  return value < 0.01 ? `$${value.toFixed(5)}` : `$${value.toFixed(3)}`;
}

function verdict(value) {
  return typeof value === "boolean" ? (value ? "true" : "false") : text(value);
}

// A session with no end in a run that is no longer going was cut off when the run stopped.
function shownStatus(session) {
  return session.status === "running" && state.run && state.run.status !== "running" ? "stopped" : session.status;
}

function badge(status) {
  return el("span", {class: `badge s-${status}`}, status);
}

// --- the runs list --------------------------------------------------------------------

function renderRuns() {
  const list = clear($("run-list"));
  const filter = $("run-filter").value.trim().toLowerCase();
  for (const run of [...state.runs].reverse()) {
    const haystack = `${run.run_id} ${run.program} ${run.status}`.toLowerCase();
    if (filter && !haystack.includes(filter)) continue;
    if (!filter && isBatchRun(run.run_id)) continue; // listed under its batch (batches.js)
    const item = el(
      "li",
      {class: run.run_id === state.runId ? "selected" : "", dataset: {run: run.run_id}},
      el("a", {href: `#run=${encodeURIComponent(run.run_id)}`}, run.run_id),
      " ",
      badge(run.status),
      el("div", {class: "dim small"}, run.program, " · ", run.started),
    );
    list.append(item);
  }
  if (!list.firstChild) list.append(el("li", {class: "dim"}, state.runs.length ? "no run matches" : "no runs yet"));
}

// --- one run --------------------------------------------------------------------------

function resetRun() {
  state.run = null;
  state.programText = "";
  state.statements = [];
  state.pending = [];
  state.questions = [];
  state.damaged = [];
  for (const key of ["sessions", "decisions", "errors", "toolCalls", "permissions", "approvals"]) {
    state[key] = new Map();
  }
  state.showAllSessions = false;
}

function applyRun(data) {
  if (data.full) {
    resetRun();
    performance.mark("run-received");
  }
  state.run = data.run;
  state.statements = data.statements;
  if (data.program_text !== undefined) state.programText = data.program_text;
  for (const s of data.sessions) state.sessions.set(s.id, s);
  const lists = {decisions: "decisions", errors: "errors", tool_calls: "toolCalls",
                 permissions: "permissions", approvals: "approvals"};
  for (const [field, key] of Object.entries(lists)) {
    for (const record of data[field]) state[key].set(record.n, record);
  }
  state.pending = data.pending_approvals;
  state.questions = data.questions || [];
  state.damaged = data.damaged;
  scheduleRender();
  if (state.detailStep !== null) {
    const current = state.sessions.get(state.detailStep);
    if (current && current.v !== state.detailVersion) openDetail(state.detailStep);
  }
}

let renderPending = false;
let lastRender = 0;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  // a big run redraws at most once a second while it streams in
  const gap = state.sessions.size > 2000 ? 1000 : 150;
  const wait = Math.max(0, lastRender + gap - performance.now());
  setTimeout(() => requestAnimationFrame(() => {
    renderPending = false;
    lastRender = performance.now();
    renderRun();
  }), wait);
}

function renderRun() {
  if (!state.run) return;
  $("no-run").hidden = true;
  $("run-view").hidden = false;
  renderHead();
  renderApprovals();
  renderQuestions();
  renderProgram();
  renderTimeline();
  renderSessions();
  renderDecisions();
  renderTools();
  renderErrors();
  document.body.dataset.runStatus = state.run.status;
  document.body.dataset.sessions = String(state.sessions.size);
  performance.mark("run-rendered");
}

function renderHead() {
  const run = state.run;
  $("run-id").textContent = shownText(run.run_id);
  const status = $("run-status");
  status.textContent = shownText(run.status);
  status.className = `badge s-${run.status}`;
  $("run-meta").textContent = shownText([run.program, run.started && `started ${run.started}`,
    run.finished && `finished ${run.finished}`].filter(Boolean).join(" · "));
  const parent = run.forked_from;
  $("run-parent").hidden = !parent;
  if (parent) {
    const link = $("parent-link");
    link.textContent = shownText(text(parent.run));
    link.setAttribute("href", `#run=${encodeURIComponent(String(parent.run))}`);
    $("parent-step").textContent = shownText(text(parent.step));
  }
  const totals = clear($("run-totals"));
  const counts = run.totals.by_status;
  const facts = [
    ["sessions", `${run.totals.sessions}` + (counts.running ? ` (${counts.running} running)` : "")],
    ["tokens", run.totals.tokens.toLocaleString() + cacheNote(run.totals)],
    ["cost", run.totals.cost === null ? "—" : money(run.totals.cost) +
      (run.totals.unpriced ? ` + ${run.totals.unpriced} unpriced` : "")],
  ];
  if (run.result !== null && run.result !== undefined) facts.push(["result", text(run.result)]);
  for (const [name, value] of facts) totals.append(el("dt", {}, name), el("dd", {}, value));
  const error = $("run-error");
  error.hidden = !run.error;
  error.textContent = run.error ? shownText(text(run.error)) : "";
}

function renderApprovals() {
  const box = $("approvals");
  box.hidden = state.pending.length === 0 && $("approval-message").hidden;
  const list = clear($("pending-list"));
  for (const request of state.pending) {
    list.append(el("li", {class: "pending", dataset: {request: request.id}},
      el("div", {},
        el("strong", {}, text(request.tool)), " wants to ",
        el("strong", {}, text(request.kind)), " ",
        el("code", {}, oneLine(request.action))),
      el("div", {class: "dim small"}, `request ${request.id}`,
        request.agent ? ` · agent ${request.agent}` : "", request.step ? ` · step ${request.step}` : ""),
      el("div", {class: "buttons"},
        el("button", {type: "button", class: "approve", onclick: () => decide("once", [request.id])}, "Approve"),
        el("button", {type: "button", class: "approve-run", title: "allow the same action for the rest of the run",
          onclick: () => decide("run", [request.id])}, "Approve for the run"),
        el("button", {type: "button", class: "deny", onclick: () => decide("deny", [request.id])}, "Deny")),
    ));
  }
}

// A typed session's answer is JSON: shown indented, as the value the program bound.
function typedAnswer(s) {
  if (!s.shape) return s.answer;
  try {
    return JSON.stringify(JSON.parse(s.answer), null, 2);
  } catch {
    return s.answer;  // an answer that did not validate (asked again as its own step)
  }
}

async function decide(answer, ids) {
  const message = $("approval-message");
  for (const button of document.querySelectorAll("#pending-list button")) button.disabled = true;
  let shown;
  try {
    const response = await api(`/api/runs/${encodeURIComponent(state.runId)}/approvals`, {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({answer, ids}),
    });
    const body = await response.json();
    if (response.ok) {
      const verb = {once: "approved", run: "approved for the run", deny: "denied"}[answer];
      const what = body.answered.map((r) => `${r.tool} ${r.kind} ${oneLine(r.action)}`).join(", ");
      shown = `${verb}: ${what}. Continue the run with: ${body.next}`;
      message.className = "notice";
    } else {
      shown = body.error || `error ${response.status}`;
      message.className = "notice error-text";
    }
  } catch (error) {
    shown = `could not reach prose ui: ${error}`;
    message.className = "notice error-text";
  }
  message.textContent = shownText(shown);
  message.hidden = false;
  $("approvals").hidden = false;
  for (const button of document.querySelectorAll("#pending-list button")) button.disabled = false;
}

function renderQuestions() {
  const waiting = state.questions.filter((q) => q.answer === null);
  const box = $("questions");
  box.hidden = waiting.length === 0 && $("question-message").hidden;
  // drawn again only when the questions change: an answer being typed is kept
  const drawn = waiting.map((q) => `${q.id}:${q.digest}`).join(" ");
  if ($("question-list").dataset.drawn === drawn) return;
  const list = clear($("question-list"));
  list.dataset.drawn = drawn;
  for (const question of waiting) {
    const form = el("form", {class: "question", dataset: {question: question.id}});
    const options = question.options || [];
    if (options.length) {
      options.forEach((option, index) => {
        form.append(el("label", {class: "option"},
          el("input", {type: "radio", name: "answer", value: String(index + 1),
            checked: option === question.default}),
          " ", oneLine(option)));
      });
    } else {
      form.append(el("input", {type: "text", name: "answer", class: "answer-text",
        value: question.default === null ? "" : text(question.default)}));
    }
    form.append(el("button", {type: "submit", class: "answer"}, "Answer"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = form.querySelector("input[name=answer]:checked, input.answer-text");
      if (chosen) answerQuestion(question.id, chosen.value);
    });
    const facts = [`question ${question.id}`, question.step ? `step ${question.step}` : "",
      question.default !== null ? `default ${oneLine(question.default)}` : "",
      question.timeout !== null ? `timeout ${question.timeout} s` : ""].filter(Boolean);
    list.append(el("li", {class: "pending"},
      el("div", {}, el("strong", {}, oneLine(question.question))),
      el("div", {class: "dim small"}, facts.join(" · ")),
      form));
  }
}

async function answerQuestion(id, answer) {
  const message = $("question-message");
  for (const button of document.querySelectorAll("#question-list button")) button.disabled = true;
  let shown;
  try {
    const response = await api(`/api/runs/${encodeURIComponent(state.runId)}/answers`, {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({id, text: answer}),
    });
    const body = await response.json();
    if (response.ok) {
      shown = `answered ${body.answered.id}: ${oneLine(body.answered.answer)}. ` +
        `Continue the run with: ${body.next}`;
      message.className = "notice";
    } else {
      shown = body.error || `error ${response.status}`;
      message.className = "notice error-text";
    }
  } catch (error) {
    shown = `could not reach prose ui: ${error}`;
    message.className = "notice error-text";
  }
  message.textContent = shownText(shown);
  message.hidden = false;
  $("questions").hidden = false;
  for (const button of document.querySelectorAll("#question-list button")) button.disabled = false;
}

function renderProgram() {
  const list = clear($("program"));
  const lines = state.programText.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const byLine = new Map();
  const within = new Map();
  for (const stmt of state.statements) {
    byLine.set(stmt.line, stmt);
    for (let line = stmt.line; line <= stmt.end_line; line++) within.set(line, stmt);
  }
  lines.forEach((line, index) => {
    const number = index + 1;
    const stmt = within.get(number);
    const head = byLine.get(number);
    const item = el("li", {class: stmt ? `stmt s-${stmt.status}` : ""},
      el("span", {class: "line-number"}, number), el("code", {title: line}, line || " "));
    if (head) {
      item.dataset.statement = String(head.number);
      const count = head.sessions ? `${head.sessions} session${head.sessions === 1 ? "" : "s"}` : "";
      item.append(el("span", {class: "stmt-status", title: count},
        head.status === "definition" ? null : badge(head.status)));
    }
    list.append(item);
  });
}

// Sessions of each top-level statement, packed into lanes: sessions that overlap in time
// (parallel branches, pmap items) sit side by side in lanes of their own.
function renderTimeline() {
  const box = clear($("timeline"));
  const fragment = document.createDocumentFragment();
  const sessions = [...state.sessions.values()].filter((s) => s.started !== null);
  if (!sessions.length) {
    box.append(el("p", {class: "dim"}, "no sessions yet"));
    $("timeline-span").textContent = "";
    return;
  }
  const now = Date.now() / 1000;
  const running = state.run.status === "running";
  const end = (s) => s.ended !== null ? s.ended : (running ? now : s.started);
  const t0 = Math.min(...sessions.map((s) => s.started));
  const t1 = Math.max(...sessions.map(end), t0 + 0.001);
  const span = t1 - t0;
  $("timeline-span").textContent = `(${seconds(span)})`;
  const groups = new Map();
  for (const s of sessions) {
    const top = parseInt(s.step, 10) || 0;
    if (!groups.has(top)) groups.set(top, []);
    groups.get(top).push(s);
  }
  const labels = new Map(state.statements.map((st) => [st.number, st]));
  const axis = el("div", {class: "axis"});
  for (let i = 0; i <= 4; i++) {
    axis.append(el("span", {style: {left: `${i * 25}%`}}, seconds((span * i) / 4)));
  }
  fragment.append(axis);
  for (const [top, members] of [...groups.entries()].sort((a, b) => a[0] - b[0])) {
    members.sort((a, b) => a.started - b.started || a.step.localeCompare(b.step));
    const laneEnds = [];
    const placed = members.map((s) => {
      let lane = laneEnds.findIndex((t) => t <= s.started);
      if (lane < 0) { lane = laneEnds.length; laneEnds.push(0); }
      laneEnds[lane] = end(s);
      return [s, lane];
    });
    const stmt = labels.get(top);
    const group = el("div", {class: "lane-group", dataset: {statement: String(top)}},
      el("div", {class: "lane-label"}, stmt ? `line ${stmt.line} · ${stmt.kind}` : `statement ${top}`,
        el("span", {class: "dim"}, ` ${members.length} session${members.length === 1 ? "" : "s"}`)));
    const lanes = el("div", {class: "lanes", style: {height: `${laneEnds.length * 22}px`}});
    for (const [s, lane] of placed) {
      const left = ((s.started - t0) / span) * 100;
      const width = Math.max(((end(s) - s.started) / span) * 100, 0.3);
      lanes.append(el("div", {
        class: `bar s-${shownStatus(s)}`,
        style: {left: `${left}%`, width: `${width}%`, top: `${lane * 22}px`},
        title: `${s.step} ${s.binding || s.kind} · ${s.model} · ${shownStatus(s)}` +
          (s.elapsed !== null ? ` · ${seconds(s.elapsed)}` : ""),
        dataset: {step: s.step},
      }, s.step));
    }
    group.append(lanes);
    fragment.append(group);
  }
  box.append(fragment);
}

function renderSessions() {
  const body = clear($("sessions").tBodies[0]);
  const filter = $("session-filter").value.trim().toLowerCase();
  let rows = [...state.sessions.values()];
  if (filter) {
    rows = rows.filter((s) => `${s.step} ${s.binding} ${s.agent} ${s.model} ${s.status} ${s.prompt_preview} ${s.answer_preview}`
      .toLowerCase().includes(filter));
  }
  $("session-count").textContent = `(${state.sessions.size})`;
  const shown = state.showAllSessions ? rows : rows.slice(0, SESSION_ROWS);
  const fragment = document.createDocumentFragment();
  for (const s of shown) {
    fragment.append(el("tr", {dataset: {step: s.step}, tabindex: "0", class: s.step === state.detailStep ? "selected" : ""},
      el("td", {}, el("code", {}, s.step)),
      el("td", {}, text(s.binding)),
      el("td", {}, text(s.agent)),
      el("td", {}, text(s.model)),
      el("td", {}, badge(shownStatus(s))),
      el("td", {class: "num", title: `${s.input_tokens} in + ${s.output_tokens} out`}, s.tokens),
      el("td", {class: "num"}, money(s.cost)),
      el("td", {class: "num"}, seconds(s.elapsed)),
      el("td", {class: "preview"}, s.prompt_preview),
      el("td", {class: "preview"}, s.status === "failed" ? text(s.error) : s.answer_preview),
    ));
  }
  body.append(fragment);
  const more = $("show-all-sessions");
  more.hidden = shown.length >= rows.length;
  more.textContent = `show all ${rows.length} sessions`;
}

function fillTable(id, records, cells) {
  const body = clear($(id).tBodies[0]);
  const fragment = document.createDocumentFragment();
  for (const record of records) fragment.append(el("tr", {}, ...cells(record).map((c) => el("td", {}, c))));
  body.append(fragment);
}

function renderDecisions() {
  const records = [...state.decisions.values()];
  $("decisions-box").hidden = records.length === 0;
  fillTable("decisions", records, (d) => [el("code", {}, text(d.step)), text(d.kind), text(d.question),
    el("strong", {}, verdict(d.verdict)), text(d.reason)]);
}

function renderTools() {
  const calls = [...state.toolCalls.values()];
  const permissions = [...state.permissions.values()];
  const approvals = [...state.approvals.values()];
  $("tools-box").hidden = !(calls.length || permissions.length || approvals.length);
  fillTable("tool-calls", calls, (c) => [el("code", {}, c.at), text(c.tool),
    el("code", {class: "preview"}, text(c.arguments)),
    c.result === null ? el("span", {class: "dim"}, "no result yet")
      : el("span", {class: c.is_error ? "error-text preview" : "preview"}, text(c.result))]);
  fillTable("permissions", permissions, (p) => [el("code", {}, p.at), badge(text(p.decision)), text(p.tool),
    text(p.kind), el("code", {}, oneLine(p.action)), text(p.reason)]);
  fillTable("approvals-done", approvals, (a) => [text(a.id), text(a.answer), text(a.kind),
    el("code", {}, oneLine(a.action)), text(a.by)]);
}

function renderErrors() {
  const errors = [...state.errors.values()];
  $("errors-box").hidden = errors.length === 0;
  const list = clear($("errors"));
  for (const e of errors) {
    list.append(el("li", {}, el("code", {}, text(e.step)), ` ${text(e.ev)}: `,
      text(e.error || e.question), e.attempt ? el("span", {class: "dim"}, ` (attempt ${e.attempt})`) : null));
  }
  $("damaged-box").hidden = state.damaged.length === 0;
  const damaged = clear($("damaged"));
  for (const problem of state.damaged) damaged.append(el("li", {}, problem));
}

// --- a session in full ----------------------------------------------------------------

async function openDetail(step) {
  state.detailStep = step;
  const summary = state.sessions.get(step);
  state.detailVersion = summary ? summary.v : -1;
  const response = await api(`/api/runs/${encodeURIComponent(state.runId)}/session?step=${encodeURIComponent(step)}`);
  if (!response.ok || state.detailStep !== step) return;
  const s = await response.json();
  $("detail").hidden = false;
  $("detail-step").textContent = shownText(s.step);
  const facts = clear($("detail-facts"));
  const shown = [
    ["status", badge(shownStatus(s))], ["binding", text(s.binding)], ["kind", s.kind], ["agent", text(s.agent)],
    ["model", text(s.model)], ["tokens", `${s.input_tokens} in + ${s.output_tokens} out` + cacheNote(s)],
    ["cost", money(s.cost)], ["duration", seconds(s.elapsed)], ["attempt", String(s.attempt)],
    ["finish", text(s.finish_reason)],
  ];
  if (s.inherited) { // a fork's answer, not sent: its parent's, or a value the fork set
    shown.push(["answer from", s.inherited.set !== undefined ? `set by the fork (${text(s.inherited.set)})`
      : `run ${text(s.inherited.run)}, step ${text(s.inherited.step)}`]);
  }
  for (const [name, value] of shown) facts.append(el("dt", {}, name), el("dd", {}, value));
  const body = clear($("detail-body"));
  if (s.error) body.append(el("h4", {}, "error"), el("pre", {class: "error-text"}, s.error));
  if (s.system) body.append(el("h4", {}, "system prompt"), el("pre", {class: "system"}, s.system));
  for (const message of s.messages) {
    body.append(el("h4", {}, message.role === "user" ? "prompt" : message.role),
      el("pre", {class: `message m-${message.role}`}, message.text));
  }
  body.append(el("h4", {}, "answer"),
    el("pre", {class: "answer"}, s.status !== "running" ? typedAnswer(s)
      : shownStatus(s) === "stopped" ? "(no answer: the run stopped first)" : "(still running)"));
  if (s.shape) body.append(el("h4", {}, "shape"), el("pre", {class: "shape"}, JSON.stringify(s.shape, null, 2)));
  for (const row of document.querySelectorAll("#sessions tr.selected")) row.classList.remove("selected");
  const row = document.querySelector(`#sessions tr[data-step="${CSS.escape(step)}"]`);
  if (row) row.classList.add("selected");
  showForkForm();
}

// --- fork from here -------------------------------------------------------------------

// The run's inputs, each a field holding its value (changed ones are sent), and the bindings
// to set; the step is the session shown.
function showForkForm() {
  const inputs = clear($("fork-inputs"));
  for (const [name, value] of Object.entries(state.run.inputs || {})) {
    const shown = typeof value === "string" ? value : JSON.stringify(value);
    const field = el("input", {type: "text", name, dataset: {input: name}});
    field.value = shown; // a property, never markup; compared as is when sent
    field.dataset.was = shown;
    inputs.append(el("label", {}, `input ${name} `, field));
  }
  $("fork-set").value = "";
  $("fork-message").hidden = true;
  $("fork-form").hidden = false;
}

function forkRequest() {
  const inputs = {};
  for (const field of document.querySelectorAll("#fork-inputs input")) {
    if (field.value === field.dataset.was) continue;
    const name = field.dataset.input;
    if (typeof state.run.inputs[name] === "string") {
      inputs[name] = field.value;
      continue;
    }
    try { // a list, a number...: JSON, as the run was given it
      inputs[name] = JSON.parse(field.value);
    } catch (error) {
      return {problem: `input ${name} is JSON (as the run had it): ${error.message}`};
    }
  }
  const set = {};
  for (const line of $("fork-set").value.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    if (at < 1) return {problem: `write NAME=VALUE, not ${JSON.stringify(line)}`};
    set[line.slice(0, at).trim()] = line.slice(at + 1);
  }
  return {body: {step: state.detailStep, inputs, set}};
}

async function startFork(event) {
  event.preventDefault();
  const message = $("fork-message");
  const asked = forkRequest();
  let shown = asked.problem;
  message.className = "notice error-text";
  if (!shown) {
    $("fork-start").disabled = true;
    try {
      const response = await api(`/api/runs/${encodeURIComponent(state.runId)}/fork`, {
        method: "POST",
        headers: {"Content-Type": "application/json"},
        body: JSON.stringify(asked.body),
      });
      const body = await response.json();
      if (response.ok) {
        location.hash = `run=${encodeURIComponent(body.run_id)}`; // watch the fork
        return;
      }
      shown = body.error || `error ${response.status}`;
    } catch (error) {
      shown = `could not reach prose ui: ${error}`;
    } finally {
      $("fork-start").disabled = false;
    }
  }
  message.textContent = shownText(shown);
  message.hidden = false;
}

function closeDetail() {
  state.detailStep = null;
  $("detail").hidden = true;
}

// --- the live stream ------------------------------------------------------------------

function connect() {
  if (state.stream) state.stream.close();
  let url = `/api/events?token=${encodeURIComponent(token)}`;
  if (state.runId) url += `&run=${encodeURIComponent(state.runId)}`;
  const stream = new EventSource(url);
  state.stream = stream;
  const status = $("connection");
  stream.onopen = () => { status.dataset.state = "live"; status.textContent = "live"; };
  stream.onerror = () => { status.dataset.state = "down"; status.textContent = "reconnecting…"; };
  stream.addEventListener("runs", (event) => {
    state.runs = JSON.parse(event.data);
    renderRuns();
  });
  stream.addEventListener("run", (event) => applyRun(JSON.parse(event.data)));
}

function selectFromHash() {
  const match = /run=([^&]+)/.exec(location.hash);
  const runId = match ? decodeURIComponent(match[1]) : null;
  if (runId === state.runId && state.stream) return;
  state.runId = runId;
  resetRun();
  closeDetail();
  $("approval-message").hidden = true;
  $("run-view").hidden = true;
  $("no-run").hidden = false;
  renderRuns();
  connect();
}

document.addEventListener("DOMContentLoaded", () => {
  $("run-filter").addEventListener("input", renderRuns);
  $("session-filter").addEventListener("input", () => renderSessions());
  $("show-all-sessions").addEventListener("click", () => { state.showAllSessions = true; renderSessions(); });
  $("detail-close").addEventListener("click", closeDetail);
  $("fork-form").addEventListener("submit", startFork);
  // one listener for all bars and rows (a run may have thousands)
  for (const id of ["timeline", "sessions"]) {
    $(id).addEventListener("click", (event) => {
      const target = event.target.closest("[data-step]");
      if (target) openDetail(target.dataset.step);
    });
  }
  $("sessions").addEventListener("keydown", (event) => {
    const target = event.target.closest("tr[data-step]");
    if (target && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      openDetail(target.dataset.step);
    }
  });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") closeDetail(); });
  window.addEventListener("hashchange", selectFromHash);
  // running sessions' bars grow with the clock between events
  setInterval(() => { if (state.run && state.run.status === "running") scheduleRender(); }, 1000);
  selectFromHash();
});

// The prompt cache's part of a prompt count, when it had one: " (900 cache read)".
function cacheNote(counts) {
  const parts = [];
  if (counts.cache_read_tokens) parts.push(`${counts.cache_read_tokens} cache read`);
  if (counts.cache_write_tokens) parts.push(`${counts.cache_write_tokens} cache write`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}
