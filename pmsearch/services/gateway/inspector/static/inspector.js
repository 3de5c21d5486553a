// The run inspector's one script. Every piece of run data (mail above all) is written
// with textContent or as text nodes, never as markup: mail is written by strangers.
// The key lives in this tab's sessionStorage and travels only in an Authorization
// header; EventSource cannot send one, so the SSE stream is read with fetch().
"use strict";

(() => {
  const STORE = "pmsearch.inspector.key";
  const runId = document.body.dataset.runId;
  const base = "/runs/" + encodeURIComponent(runId);
  const $ = (id) => document.getElementById(id);
  const state = { view: null, finished: false, timer: null, controller: null, lastId: null, maxStep: 0, evidence: new Set() };

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function auth() {
    return { Authorization: "Bearer " + sessionStorage.getItem(STORE) };
  }

  // ------------------------------------------------------------ sign-in and problems

  function showLogin(message) {
    $("run").hidden = true;
    $("sign-out").hidden = true;
    $("login").hidden = false;
    if (message) showProblem(message); else $("problem").hidden = true;
    $("key").focus();
  }

  function showProblem(text) {
    $("problem").textContent = text;
    $("problem").hidden = false;
  }

  async function problemText(resp) {
    if (resp.status === 404) return "No run " + runId + " for this key: it does not exist, has expired, or belongs to someone else.";
    try {
      const body = await resp.json();
      return (body.title || "Error") + ": " + (body.detail || resp.status);
    } catch (e) {
      return "The gateway answered " + resp.status + ".";
    }
  }

  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    $("key").value = "";
    if (!key) return;
    sessionStorage.setItem(STORE, key);
    $("login").hidden = true;
    $("problem").hidden = true;
    load();
  });

  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(STORE);
    if (state.controller) state.controller.abort();
    window.location.reload();
  });

  // ------------------------------------------------------------ loading

  async function load() {
    if (!sessionStorage.getItem(STORE)) return showLogin();
    let resp;
    try {
      resp = await fetch(base + "/data", { headers: auth(), cache: "no-store" });
    } catch (e) {
      return showProblem("The gateway cannot be reached.");
    }
    if (resp.status === 401) {
      sessionStorage.removeItem(STORE);
      return showLogin("That key or token was not accepted.");
    }
    if (!resp.ok) return showProblem(await problemText(resp));
    const view = await resp.json();
    renderRun(view);
    if (view.result) renderResult(view.result, view.sources);
    else if (!state.controller) follow();
  }

  // ------------------------------------------------------------ the live stream

  async function follow() {
    const controller = new AbortController();
    state.controller = controller;
    const headers = Object.assign(auth(), { Accept: "text/event-stream" });
    if (state.lastId) headers["Last-Event-ID"] = state.lastId;
    let resp;
    try {
      resp = await fetch(base + "/events", { headers: headers, signal: controller.signal, cache: "no-store" });
    } catch (e) {
      return retry(controller);
    }
    if (!resp.ok) return showProblem(await problemText(resp));
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (e) {
        break;
      }
      if (chunk.done) break;
      let text = buffer + decoder.decode(chunk.value, { stream: true });
      // A CR at the end may be the first half of a CRLF: keep it for the next chunk.
      const held = text.endsWith("\r") ? "\r" : "";
      if (held) text = text.slice(0, -1);
      text = text.replace(/\r\n?/g, "\n");
      let end;
      while ((end = text.indexOf("\n\n")) >= 0) {
        handleFrame(text.slice(0, end));
        text = text.slice(end + 2);
      }
      buffer = text + held;
      if (state.finished) {
        controller.abort();
        return;
      }
    }
    retry(controller);
  }

  function retry(controller) {
    if (state.finished || controller.signal.aborted) return;
    state.controller = null;
    setTimeout(() => { if (!state.finished && !state.controller) follow(); }, 1000);
  }

  function handleFrame(frame) {
    let event = "message";
    let id = null;
    const data = [];
    for (const line of frame.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
    if (!data.length) return;
    if (id) state.lastId = id;
    let payload;
    try {
      payload = JSON.parse(data.join("\n"));
    } catch (e) {
      return;
    }
    if (event === "step") addLiveStep(payload);
    else if (event === "evidence" && payload.message) addEvidence(payload.message);
    else if (event === "done") finish(payload);
    else if (event === "error") {
      state.finished = true;
      stopTimer();
      showProblem("The run did not finish in time: " + (payload.detail || ""));
    }
  }

  async function finish(result) {
    state.finished = true;
    stopTimer();
    // The data route adds each excerpt's place in its source; the event alone has none.
    try {
      const resp = await fetch(base + "/data", { headers: auth(), cache: "no-store" });
      if (resp.ok) {
        const view = await resp.json();
        if (view.result) return renderResult(view.result, view.sources);
      }
    } catch (e) { /* fall through: the result without its sources */ }
    renderResult(result, []);
  }

  // ------------------------------------------------------------ rendering

  function renderRun(view) {
    state.view = view;
    $("login").hidden = true;
    $("run").hidden = false;
    $("sign-out").hidden = false;
    $("view-label").textContent = view.view === "admin"
      ? "Admin view · tenant " + view.tenant_id + " · principal " + view.principal
      : "Your run · principal " + view.principal;
    $("question").textContent = view.question;
    $("status").textContent = view.status;
    $("steps-max").textContent = view.max_steps;
    $("steps-meter").max = view.max_steps;
    $("seconds-max").textContent = view.max_seconds.toFixed(0);
    $("seconds-meter").max = view.max_seconds;
    if (view.status === "running" && !state.timer) {
      state.timer = setInterval(() => {
        const spent = Math.min(Date.now() / 1000 - view.created_at, view.max_seconds);
        setUsed("seconds", Math.max(0, spent).toFixed(1));
      }, 500);
    }
  }

  function stopTimer() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
  }

  function setUsed(what, value) {
    $(what + "-used").textContent = value;
    $(what + "-meter").value = Number(value);
  }

  function argsText(args) {
    return JSON.stringify(args || {}, null, 1).replace(/\n\s*/g, " ");
  }

  function callItem(call) {
    const item = el("li", null, "call");
    item.append(el("code", call.tool), " ", el("span", argsText(call.arguments), "args"));
    if (call.ok === false) {
      item.append(" ", el("span", "refused: " + (call.error_code || "error") + (call.error ? " (" + call.error + ")" : ""), "failed"));
    } else if (call.ok === true) {
      item.append(" ", el("span", "→ " + (call.message_ids || []).length + " messages, " + Math.round(call.duration_ms || 0) + " ms", "muted"));
    }
    return item;
  }

  function stepItem(step, kind, detail, calls) {
    const item = el("li", null, "step");
    item.dataset.step = step;
    item.append(el("span", "Step " + step + " · " + kind, "step-kind"));
    if (detail) item.append(" ", el("span", detail, "muted"));
    if (calls && calls.length) {
      const list = el("ul");
      for (const call of calls) list.append(callItem(call));
      item.append(list);
    }
    return item;
  }

  function addLiveStep(payload) {
    if (state.finished) return;
    const detail = payload.action ? "decided: " + payload.action : "";
    const item = stepItem(payload.step, payload.kind, detail, payload.calls);
    item.classList.add("live");
    $("steps").append(item);
    if (payload.step > state.maxStep) {
      state.maxStep = payload.step;
      setUsed("steps", state.maxStep);
    }
  }

  function decodeEntities(text) {
    const named = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" };
    return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, name) => {
      if (name[0] === "#") {
        const code = name[1] === "x" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
      return Object.prototype.hasOwnProperty.call(named, name) ? named[name] : whole;
    });
  }

  // A snippet is escaped mail text with the query's terms in <mark>: rebuilt from text
  // nodes and <mark> elements, so nothing in it is ever parsed as markup.
  function snippetNode(snippet) {
    const node = el("p", null, "snippet");
    let marked = false;
    for (const piece of String(snippet || "").split(/(<mark>|<\/mark>)/)) {
      if (piece === "<mark>") marked = true;
      else if (piece === "</mark>") marked = false;
      else if (piece) node.append(marked ? el("mark", decodeEntities(piece)) : document.createTextNode(decodeEntities(piece)));
    }
    return node;
  }

  function when(date) {
    if (!date) return "no date";
    const parsed = new Date(date);
    return isNaN(parsed) ? String(date) : parsed.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function addEvidence(message) {
    if (state.evidence.has(message.message_id)) return;
    state.evidence.add(message.message_id);
    const card = el("article", null, "card");
    card.dataset.messageId = message.message_id;
    card.append(el("p", message.subject || "(no subject)", "subject"));
    // Whether the receiving mail server authenticated the sender (DKIM/DMARC): a From
    // header alone can be forged.
    const auth = {pass: " · sender authenticated", fail: " · sender failed authentication"}[message.sender_auth] || "";
    card.append(el("p", message.sender + " · " + when(message.date) + auth, "meta"));
    card.append(snippetNode(message.snippet));
    $("evidence").append(card);
  }

  function sourceNode(ctx) {
    const node = el("pre", null, "source");
    if (ctx.kept) {
      node.append((ctx.clipped_start ? "…" : "") + ctx.before, el("mark", ctx.text), ctx.after + (ctx.clipped_end ? "…" : ""));
    } else {
      node.append(el("mark", ctx.text));
    }
    return node;
  }

  function renderAnswer(answer, sources, byId) {
    const list = $("answer");
    list.replaceChildren();
    answer.sentences.forEach((sentence, i) => {
      const item = el("li", null, "sentence");
      item.append(el("p", sentence.text, "sentence-text"));
      sentence.citations.forEach((citation, j) => {
        const ctx = sources.find((s) => s.sentence === i && s.citation === j)
          || { text: citation.excerpt.text, kept: false, before: "", after: "" };
        const source = byId.get(citation.message_id);
        const box = el("div", null, "citation");
        const label = source ? (source.subject || "(no subject)") + " — " + source.sender + " · " + when(source.date) : citation.message_id;
        const place = citation.excerpt.place ? " · " + citation.excerpt.place : "";
        box.append(el("p", label + " · " + citation.excerpt.part + place, "meta"));
        box.append(sourceNode(ctx));
        if (!ctx.kept) box.append(el("p", "The source text is no longer kept; the excerpt alone is shown.", "muted"));
        item.append(box);
      });
      list.append(item);
    });
    $("answer-section").hidden = false;
  }

  function renderResult(result, sources) {
    state.finished = true;
    stopTimer();
    if (state.controller) state.controller.abort();
    $("status").textContent = "finished";
    $("outcome").textContent = result.outcome;
    const usage = result.usage || {};
    setUsed("steps", usage.steps || 0);
    setUsed("seconds", (usage.seconds || 0).toFixed(1));
    $("model-calls").textContent = (usage.model_calls || 0) + " (" + (usage.prompt_tokens || 0) + " prompt, " + (usage.completion_tokens || 0) + " completion tokens)";
    if (result.reason) {
      $("reason").replaceChildren("Reason: ", el("span", result.reason, "reason-code"));
      $("reason").hidden = false;
    }
    if (result.model_note) {
      $("model-note").textContent = "The model's own note (unverified): " + result.model_note;
      $("model-note").hidden = false;
    }
    const byId = new Map((result.evidence || []).map((m) => [m.message_id, m]));
    if (result.answer) renderAnswer(result.answer, sources || [], byId);

    const trace = result.trace || {};
    const removed = trace.removed_sentences || [];
    $("removed").replaceChildren(...removed.map((r) => {
      const item = el("li");
      item.append(el("span", r.reason, "reason-code"), " ", el("span", r.text));
      if (r.offending) item.append(" ", el("span", "(" + r.offending + ")", "muted"));
      if (r.replaced) item.append(" ", el("span", "replaced by the mail's sentence it was made from", "muted"));
      return item;
    }));
    $("removed-section").hidden = !removed.length;
    const widen = trace.widen_attempts || [];
    $("widen").replaceChildren(...widen.map((w) => {
      const item = el("li");
      item.append("Step " + w.step + " · ", el("code", w.tool), " ", el("span", w.reason, "reason-code"), " ", el("span", w.detail, "muted"));
      return item;
    }));
    $("widen-section").hidden = !widen.length;

    // The trace is the whole record: it replaces what the stream showed.
    $("steps").replaceChildren(...(trace.steps || []).map((s) => {
      const detail = [s.note, Math.round(s.duration_ms || 0) + " ms"].filter(Boolean).join(" · ");
      return stepItem(s.step, s.kind, detail, s.tool_calls);
    }));
    $("evidence").replaceChildren();
    state.evidence.clear();
    for (const message of result.evidence || []) addEvidence(message);
    document.body.dataset.finished = "true";
  }

  load();
})();
