// Perspect's page: a claim's answer as two columns, over the JSON API of `perspect serve`.
// No build step and no library: every element is made with the DOM (texts never go through
// innerHTML), so that nothing a reader's sources hold can run here.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { index: null, claim: null, result: null, job: null, undo: [], timing: {} };
window.perspectTiming = state.timing; // read by bench/page.py and the browser tests

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined) e.append(kid);
  return e;
}

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["content-type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let r;
  try {
    r = await fetch(path, opts);
  } catch (e) {
    throw new Error("the server cannot be reached: is `perspect serve` still running?");
  }
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!r.ok) {
    const msg = (data && data.error) || `the server answered ${r.status}`;
    const err = new Error(msg);
    err.status = r.status;
    throw err;
  }
  return data;
}

function showError(msg) {
  const box = $("error");
  box.textContent = msg;
  box.hidden = !msg;
}

function status(msg, fraction) {
  const box = $("status");
  box.replaceChildren();
  if (!msg) return;
  box.append(el("span", { text: msg }));
  if (fraction !== undefined) {
    box.append(el("progress", { max: "1", value: String(fraction), "aria-label": "search progress" }));
  }
}

// -- searching ------------------------------------------------------------------------------
async function search(claim) {
  claim = claim.trim();
  showError("");
  if (!claim) {
    showError("Type a claim first: an empty claim has no perspectives.");
    $("claim").focus();
    return;
  }
  if (state.job) await cancel();
  state.claim = claim;
  $("cancel").hidden = false;
  $("go").disabled = true;
  status("Starting the search…", 0);
  state.timing.started = performance.now();
  try {
    const job = await api("POST", "/searches", { claim });
    state.job = job.id;
    while (state.job === job.id) {
      const s = await api("GET", `/searches/${job.id}`);
      if (s.state === "running" || s.state === "queued") {
        status(s.stage ? `Working: ${s.stage}…` : "Waiting for the models…", s.fraction || 0);
        await new Promise((ok) => setTimeout(ok, 150));
        continue;
      }
      if (s.state === "done") {
        state.timing.reply = performance.now();
        draw(s.result);
        state.timing.drawn = performance.now();
        state.timing.drawMs = state.timing.drawn - state.timing.reply;
        status(`${s.result.clusters.length} perspectives in ${(s.result.took_ms / 1000).toFixed(1)} s`);
      } else if (s.state === "cancelled") {
        status("Search cancelled.");
      } else {
        status("");
        showError(s.error || "the search failed");
      }
      break;
    }
  } catch (e) {
    status("");
    showError(e.message);
  } finally {
    if (state.job) state.job = null;
    $("cancel").hidden = true;
    $("go").disabled = false;
  }
}

async function cancel() {
  const id = state.job;
  state.job = null;
  if (id) {
    try { await api("DELETE", `/searches/${id}`); } catch (e) { /* already over */ }
  }
  status("Search cancelled.");
}

// -- the answer -----------------------------------------------------------------------------
function strengthBar(c) {
  const pct = Math.round(100 * c.strength);
  return el("div", { class: `bar ${c.stance}`, role: "img", "aria-label": `strength ${pct} %` },
    el("span", { style: `width:${pct}%` }));
}

function reasonBlock(c) {
  const why = c.why;
  if (!why) return el("p", { class: "why none", text: "No backing sentence found." });
  const ev = (c.evidence || []).find((e) => e.id === why.evidence);
  const box = el("div", { class: "why" });
  if (ev && why.span) {
    const [a, b] = why.span;
    box.append(el("p", { class: "paragraph" }, ev.text.slice(0, a),
      el("mark", { class: "reason", text: ev.text.slice(a, b) }), ev.text.slice(b)));
    box.append(el("p", { class: "meta" }, el("span", { class: `verdict ${ev.verdict}`, text: label(ev.verdict) }),
      ` · evidence ${ev.id}${ev.metadata && ev.metadata.source ? " · " + ev.metadata.source : ""}`));
  } else {
    box.append(el("p", { class: "paragraph" }, el("mark", { class: "reason", text: why.sentence })));
    const src = why.source;
    if (src) {
      const from = [src.outlet, src.title, src.date].filter(Boolean).join(" · ") || src.article_id;
      box.append(el("p", { class: "meta", text: `from ${src.pool === "news" ? "the news" : "your documents"}: ${from}` }));
    }
  }
  return box;
}

function evidenceLine(c) {
  const ev = c.evidence || [];
  if (!ev.length) return "Why (no evidence paragraph linked)";
  return `Why (${ev.filter((e) => e.verdict === "supports").length} of ${ev.length} paragraphs back it)`;
}

function label(verdict) {
  return verdict === "contradicts" ? "argues against" : verdict;
}

function newsFor(c) {
  const items = (state.result.news || []).filter((n) => n.cluster === c.representative.id);
  if (!items.length) return null;
  return el("ul", { class: "cluster-news" }, items.map((n) => newsItem(n, true)));
}

function newsSource(n) {
  const outlet = n.outlet ? `${n.outlet} (${n.leaning || "unrated"})` : (n.leaning || "unrated");
  return [outlet, n.date, n.title].filter(Boolean).join(" · ");
}

function newsItem(n, ofCluster) {
  const rel = ofCluster && n.cluster_relation ? n.cluster_relation : n.relation;
  const parts = [];
  let at = 0;
  for (const r of n.rationale || []) {
    if (r.start < at) continue;
    parts.push(n.text.slice(at, r.start), el("u", { text: n.text.slice(r.start, r.end) }));
    at = r.end;
  }
  parts.push(n.text.slice(at));
  return el("li", { class: `news ${rel}`, "data-leaning": n.leaning || "unrated" },
    el("p", { class: "meta" }, el("span", { class: `leaning ${n.leaning || "unrated"}`, text: n.leaning || "unrated" }),
      " ", newsSource(n)),
    el("p", {}, el("strong", { text: `${rel}${ofCluster ? "" : " the claim"}: ` }), ...parts));
}

function clusterCard(c, where) {
  const rep = c.representative;
  const others = (c.members || []).filter((m) => m.id !== rep.id);
  const corrected = (c.members || []).some((m) => m.corrected);
  const other = c.stance === "support" ? "oppose" : "support";
  const merge = el("select", { "aria-label": "merge with another perspective" },
    el("option", { value: "", text: "Merge with…" }),
    state.result.clusters.filter((o) => o.representative.id !== rep.id)
      .map((o) => el("option", { value: o.representative.id, text: o.representative.text.slice(0, 80) })));
  merge.addEventListener("change", () => merge.value && correct({ same: [rep.id, merge.value] }));
  const moveTo = where === "unclear" ? ["support", "oppose"] : [other];
  return el("li", { class: "cluster", "data-id": rep.id, "data-side": c.stance },
    el("div", { class: "head" }, strengthBar(c),
      el("span", { class: "side-label", text: c.side_label }),
      corrected ? el("span", { class: "tag", text: "corrected" }) : null),
    el("p", { class: "rep", text: rep.text }),
    c.debate ? el("p", { class: "debate", text: c.debate.label }) : null,
    others.length ? el("details", { class: "phrasings" },
      el("summary", { text: `${others.length} more phrasing${others.length > 1 ? "s" : ""}` }),
      el("ul", {}, others.map((m) => el("li", { text: m.text })))) : null,
    el("details", { class: "evidence", open: true },
      el("summary", { text: evidenceLine(c) }),
      reasonBlock(c)),
    newsFor(c),
    el("div", { class: "actions" },
      moveTo.map((s) => el("button", { type: "button", text: `Move to ${s}`, onclick: () => correct({ perspective: rep.id, side: s }) })),
      el("button", { type: "button", text: "Off-topic", onclick: () => correct({ perspective: rep.id, side: "off-topic" }) }),
      merge));
}

function draw(result) {
  state.result = result;
  const cov = result.coverage || {};
  $("answer").hidden = false;
  $("coverage").textContent = `${cov.support || 0} support · ${cov.oppose || 0} oppose · ${cov.unclear || 0} unclear`;
  $("warning").hidden = !cov.warning;
  $("warning").textContent = cov.warning || "";
  const spread = result.spread || {};
  $("spread").hidden = !spread.line;
  $("spread").textContent = spread.line ? `News: ${spread.line}` : "";
  $("spread-warning").hidden = !(spread.warnings || []).length;
  $("spread-warning").textContent = (spread.warnings || []).join("; ");
  for (const side of ["support", "oppose", "unclear"]) $(side).replaceChildren();
  for (const c of result.clusters) {
    const where = c.stance === "support" || c.stance === "oppose" ? c.stance : "unclear";
    $(where).append(clusterCard(c, where));
  }
  for (const side of ["support", "oppose"]) {
    if (!$(side).children.length) $(side).append(el("li", { class: "empty", text: `No perspective shown on this side.` }));
  }
  $("unclear-box").hidden = !$("unclear").children.length;
  $("related").replaceChildren(...(result.related || []).map((m) => el("li", { text: m.text })));
  $("related-box").hidden = !(result.related || []).length;
  // the news under a sided cluster is shown there; the rest bears on the claim alone
  const sided = new Set(result.clusters.filter((c) => c.stance !== "unclear").map((c) => c.representative.id));
  const rest = (result.news || []).filter((n) => !sided.has(n.cluster));
  $("news").replaceChildren(...rest.map((n) => newsItem(n, false)));
  $("news-box").hidden = !rest.length;
  const link = `/?index=${encodeURIComponent(state.index || "")}&claim=${encodeURIComponent(result.claim)}`;
  $("link").href = link;
  history.replaceState(null, "", link);
  $("undo").disabled = !state.undo.length;
}

// -- corrections ----------------------------------------------------------------------------
// The corrections made in this tab, newest last: kept in sessionStorage, so that a reload (or the
// answer's link opened again) can still undo them.
function undoKey() {
  return `perspect-undo:${state.index}`;
}

function loadUndo() {
  try { state.undo = JSON.parse(sessionStorage.getItem(undoKey()) || "[]"); } catch (e) { state.undo = []; }
}

function saveUndo() {
  try { sessionStorage.setItem(undoKey(), JSON.stringify(state.undo)); } catch (e) { /* private mode */ }
  $("undo").disabled = !state.undo.length;
}

async function correct(what) {
  showError("");
  const body = { claim: state.claim, ...what };
  try {
    await api("POST", `/indexes/${encodeURIComponent(state.index)}/corrections`, body);
    state.undo.push(body);
    saveUndo();
    await search(state.claim);
  } catch (e) {
    showError(e.message);
  }
}

async function undo() {
  const last = state.undo.pop();
  if (!last) return;
  saveUndo();
  try {
    await api("POST", `/indexes/${encodeURIComponent(state.index)}/corrections`, { ...last, undo: true });
    await search(last.claim);
  } catch (e) {
    state.undo.push(last);
    saveUndo();
    showError(e.message);
  }
}

// -- export ---------------------------------------------------------------------------------
function markdown(r) {
  const lines = [`# ${r.claim}`, ""];
  const cov = r.coverage || {};
  lines.push(`${cov.support || 0} support · ${cov.oppose || 0} oppose · ${cov.unclear || 0} unclear`, "");
  for (const side of ["support", "oppose", "unclear"]) {
    const cs = r.clusters.filter((c) => (side === "unclear" ? !["support", "oppose"].includes(c.stance) : c.stance === side));
    if (!cs.length) continue;
    lines.push(`## ${side[0].toUpperCase() + side.slice(1)}`, "");
    for (const c of cs) {
      lines.push(`- **${c.representative.text}** (${c.side_label}, ${c.strength.toFixed(2)})`);
      if (c.why) lines.push(`  - why: ${c.why.sentence}`);
    }
    lines.push("");
  }
  if (r.spread && r.spread.line) lines.push(`News: ${r.spread.line}`);
  for (const n of r.news || []) lines.push(`- news (${n.relation}): ${n.text} (${n.outlet || ""}, ${n.leaning || "unrated"}, ${n.date || ""})`);
  return lines.join("\n") + "\n";
}

function download(name, type, text) {
  const a = el("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60) || "answer";
}

// -- compare --------------------------------------------------------------------------------
async function compare(ev) {
  ev.preventDefault();
  const a = { title: $("a-title").value.trim(), text: $("a-text").value.trim() };
  const b = { title: $("b-title").value.trim(), text: $("b-text").value.trim() };
  const out = $("comparison");
  out.replaceChildren();
  if (!a.text || !b.text) {
    out.append(el("p", { class: "error", role: "alert", text: "Paste the text of both articles first." }));
    return;
  }
  out.append(el("p", { text: "Comparing…" }));
  try {
    const r = await api("POST", "/compare", { a, b });
    const list = (title, links) => el("section", {}, el("h3", { text: `${title} (${links.length})` }),
      links.length ? el("ul", {}, links.map((x) => el("li", {},
        el("p", {}, el("strong", { text: "A: " }), x.a_text),
        el("p", {}, el("strong", { text: "B: " }), x.b_text)))) : el("p", { text: "None found." }));
    out.replaceChildren(list("Agreement", r.agreement || []), list("Dispute", r.dispute || []));
  } catch (e) {
    out.replaceChildren(el("p", { class: "error", role: "alert", text: e.message }));
  }
}

// -- start ----------------------------------------------------------------------------------
async function start() {
  state.timing.script = performance.now();
  $("ask").addEventListener("submit", (ev) => { ev.preventDefault(); search($("claim").value); });
  $("cancel").addEventListener("click", cancel);
  $("undo").addEventListener("click", undo);
  $("export-md").addEventListener("click", () => state.result && download(`${slug(state.result.claim)}.md`, "text/markdown", markdown(state.result)));
  $("export-json").addEventListener("click", () => state.result && download(`${slug(state.result.claim)}.json`, "application/json", JSON.stringify(state.result, null, 1)));
  $("compare").addEventListener("submit", compare);
  const params = new URLSearchParams(location.search);
  try {
    const meta = await api("GET", "/examples");
    state.index = meta.index;
    loadUndo();
    $("index-name").textContent = `· index ${meta.index}`;
    $("examples").replaceChildren(...meta.examples.map((x) => el("option", { value: x })));
    $("examples-line").replaceChildren("Try: ", ...meta.examples.slice(0, 3).flatMap((x, i) => [
      i ? " · " : "", el("button", { type: "button", class: "link", text: x, onclick: () => { $("claim").value = x; search(x); } })]));
  } catch (e) {
    showError(e.message);
    return;
  }
  const want = params.get("index");
  if (want && want !== state.index) {
    showError(`Unknown index "${want}": this server answers from "${state.index}".`);
    return;
  }
  const claim = params.get("claim");
  if (claim) {
    $("claim").value = claim;
    search(claim);
  } else {
    $("claim").focus();
  }
}

document.addEventListener("DOMContentLoaded", start);
