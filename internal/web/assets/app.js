// The approvals page of tollgate: a client of the server's JSON API.
//
// Rules of this file: everything that comes from the server (and so from the
// model, tools, MCP servers and hooks) reaches the DOM as text only
// (textContent, createTextNode, input values), never as HTML; no inline
// handlers (the page's Content-Security-Policy forbids them); the token stays
// in sessionStorage and is sent as Authorization: Bearer.
'use strict';

(function () {
  const TOKEN_KEY = 'tollgate.token';
  const RUN_EVENT_TYPES = [
    'run.started', 'run.resumed', 'tool.call', 'tool.decided', 'approval.requested',
    'tool.finished', 'turn.usage', 'run.halted', 'run.finished', 'run.cancel_requested',
    'run.cancelled', 'run.released', 'approval.decided', 'approval.expired', 'autonomy.changed',
  ];
  const MAX_RUN_EVENTS = 500;

  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let me = null;
  let tenantStream = null;
  let runStream = null;
  let openRunID = '';
  let knownPending = null; // Set of approval IDs seen at the last refresh
  let uid = 0;

  const $ = (id) => document.getElementById(id);

  // el builds an element; attrs are set as attributes (never as HTML) and
  // children are nodes or strings (made text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = visible(v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
    }
    return e;
  }

  // visible shows characters that would hide or reorder text (control,
  // zero-width and bidirectional ones) as \u{...}, so that what a person
  // reads is what the tool gets. Newlines and tabs stay.
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;
  function visible(s) {
    return String(s).replace(HIDDEN, (c) => '\\u{' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + '}');
  }
  function hasHidden(s) {
    HIDDEN.lastIndex = 0;
    const found = HIDDEN.test(String(s));
    HIDDEN.lastIndex = 0;
    return found;
  }

  function setText(node, s) { node.textContent = visible(s || ''); }

  function announce(msg) {
    const a = $('announcer');
    a.textContent = '';
    // A new node each time, so that screen readers read it again.
    window.setTimeout(() => { a.textContent = msg; }, 50);
  }

  // ---- API -----------------------------------------------------------

  class APIError extends Error {
    constructor(status, problem, fallback) {
      super((problem && problem.detail) || fallback);
      this.status = status;
      this.problem = problem || null;
    }
  }

  // api sends a request with the token; body is a string of JSON (sent as
  // is) or undefined. It returns the decoded JSON, or throws an APIError
  // carrying the RFC 9457 problem. The page sends no cookies; keepCookie
  // lets the browser keep one the answer sets (an MCP login's, which binds
  // the login to this browser).
  async function api(method, path, body, extra, keepCookie) {
    const headers = Object.assign({ Authorization: 'Bearer ' + token, Accept: 'application/json' }, extra || {});
    const init = { method, headers, cache: 'no-store', credentials: keepCookie ? 'same-origin' : 'omit' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = body;
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new APIError(0, null, 'the server cannot be reached');
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = null; }
    }
    if (!resp.ok) {
      if (resp.status === 401) signOut('The server refused the token: ' + ((data && data.detail) || 'unknown token'));
      throw new APIError(resp.status, data, resp.status + ' ' + resp.statusText);
    }
    return data;
  }

  const enc = encodeURIComponent;

  // ---- signing in ----------------------------------------------------

  async function signIn(t) {
    token = t;
    let p;
    try {
      p = await api('GET', 'v1/me');
    } catch (e) {
      token = '';
      sessionStorage.removeItem(TOKEN_KEY);
      showSignIn(e.status === 401 ? 'The server does not know this token.' : 'Signing in failed: ' + e.message);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, t);
    me = p;
    $('signin').hidden = true;
    $('app').hidden = false;
    $('signout').hidden = false;
    const who = $('whoami');
    who.hidden = false;
    setText(who, p.name + ' · tenant ' + p.tenant + ' · ' + (p.roles || []).join(', '));
    knownPending = null;
    $('replay').hidden = !can('approver');
    $('audit').hidden = !can('viewer');
    await Promise.all([refreshApprovals(), refreshRuns(), loadAgents(), refreshShadow(), refreshLayer(), loadMCPLogins()]);
    followTenant();
    routeFromHash();
  }

  function showSignIn(msg) {
    $('app').hidden = true;
    $('signout').hidden = true;
    $('whoami').hidden = true;
    $('stream-status').hidden = true;
    $('signin').hidden = false;
    setText($('signin-error'), msg || '');
    const input = $('token');
    input.value = '';
    input.focus();
  }

  function signOut(msg) {
    token = '';
    me = null;
    sessionStorage.removeItem(TOKEN_KEY);
    if (tenantStream) { tenantStream.close(); tenantStream = null; }
    closeRunStream();
    $('approvals').replaceChildren();
    $('runs').replaceChildren();
    $('run-view').hidden = true;
    showSignIn(msg);
  }

  // can reports whether the signed-in token has role, as the server
  // judges it: admin has every role, and every role but agent views.
  function can(role) {
    if (!me) return false;
    const roles = me.roles || [];
    if (roles.includes(role) || roles.includes('admin')) return true;
    return role === 'viewer' && roles.some((r) => r !== 'agent');
  }

  // ---- event streams -------------------------------------------------

  // stream opens GET v1/events (query q) with a fresh ticket and calls
  // onEvent for each event; when the stream fails for good (an expired
  // ticket, a restarted server), it opens a new one after the last seq seen.
  function stream(q, onEvent, onState) {
    const s = { closed: false, es: null, after: 0, retry: null };
    async function open() {
      if (s.closed) return;
      let t;
      try {
        t = await api('POST', 'v1/events/ticket', '{}');
      } catch (e) {
        onState(false);
        if (e.status !== 401) s.retry = window.setTimeout(open, 3000);
        return;
      }
      if (s.closed) return;
      let url = 'v1/events?ticket=' + enc(t.ticket) + q;
      if (s.after > 0) url += '&after=' + s.after;
      const es = new EventSource(url);
      s.es = es;
      es.onopen = () => onState(true);
      es.onerror = () => {
        onState(false);
        if (es.readyState === EventSource.CLOSED && !s.closed) {
          s.retry = window.setTimeout(open, 2000);
        }
      };
      for (const type of RUN_EVENT_TYPES) {
        es.addEventListener(type, (m) => {
          let ev;
          try { ev = JSON.parse(m.data); } catch (e) { return; }
          if (typeof ev.seq === 'number' && ev.seq > s.after) s.after = ev.seq;
          onEvent(ev);
        });
      }
    }
    s.close = () => {
      s.closed = true;
      window.clearTimeout(s.retry);
      if (s.es) s.es.close();
    };
    open();
    return s;
  }

  // Refreshes triggered by events are coalesced: many events, one request.
  function debounce(f, ms) {
    let t = null;
    return () => {
      if (t !== null) return;
      t = window.setTimeout(() => { t = null; f(); }, ms);
    };
  }
  const refreshApprovalsSoon = debounce(() => refreshApprovals(), 100);
  const refreshRunsSoon = debounce(() => { refreshRuns(); refreshShadow(); refreshLayer(); }, 150);
  const refreshRunSoon = debounce(() => { if (openRunID) loadRun(openRunID); }, 100);

  function followTenant() {
    if (tenantStream) tenantStream.close();
    const status = $('stream-status');
    tenantStream = stream('', (ev) => {
      if (ev.type.startsWith('approval.') || ev.type === 'run.halted' || ev.type === 'run.finished' || ev.type === 'run.cancelled') {
        refreshApprovalsSoon();
      }
      if (ev.type.startsWith('run.')) refreshRunsSoon();
    }, (live) => {
      status.hidden = false;
      status.className = 'stream ' + (live ? 'live' : 'down');
      setText(status, live ? 'Live' : 'Reconnecting…');
      if (live) { refreshApprovalsSoon(); refreshRunsSoon(); }
    });
  }

  // ---- approvals -----------------------------------------------------

  async function refreshApprovals() {
    if (!token) return;
    let page;
    try {
      page = await api('GET', 'v1/approvals?status=pending&limit=100');
    } catch (e) {
      setText($('approvals-error'), 'Loading the approvals failed: ' + e.message);
      return;
    }
    setText($('approvals-error'), '');
    const list = $('approvals');
    const now = Date.now();
    const seen = new Set();
    const fresh = [];
    for (const a of page.approvals || []) {
      seen.add(a.id);
      let card = cardOf(a.id);
      if (!card) {
        card = approvalCard(a);
        list.append(card);
        if (knownPending !== null && !knownPending.has(a.id)) fresh.push(a);
      }
      const cd = card.querySelector('.countdown');
      if (a.secondsLeft !== undefined && a.secondsLeft !== null) {
        cd.dataset.deadline = String(now + a.secondsLeft * 1000);
      }
    }
    // Decided elsewhere, expired or gone: off the list.
    for (const card of Array.from(list.children)) {
      if (!seen.has(card.dataset.approvalId) && !card.classList.contains('decided')) removeCard(card);
    }
    knownPending = seen;
    showBatches();
    setText($('pending-count'), seen.size ? '(' + seen.size + (page.next ? '+' : '') + ')' : '');
    setText($('approvals-more'), page.next ? 'More approvals wait than this page shows; the first ' + seen.size + ' are here. Decide these, and the next ones take their place.' : '');
    $('approvals-empty').hidden = seen.size > 0;
    tick();
    notify(fresh);
    if (fresh.length === 1) {
      announce('New approval: ' + visible(fresh[0].tool) + ' in run ' + fresh[0].runId + '.');
    } else if (fresh.length > 1) {
      announce(fresh.length + ' new approvals.');
    }
  }

  // showBatches offers, for each run with several pending approvals (the
  // parallel calls of one turn), to approve them all at once: each is sent
  // as its own decision, bound to its own digest, as its card's Approve
  // would send it.
  function showBatches() {
    const box = $('batches');
    box.replaceChildren();
    const byRun = new Map();
    for (const card of $('approvals').children) {
      if (card.classList.contains('decided') || !card.batchable) continue;
      const run = card.dataset.runId;
      if (!byRun.has(run)) byRun.set(run, []);
      byRun.get(run).push(card);
    }
    for (const [run, cards] of byRun) {
      if (cards.length < 2) continue;
      const btn = el('button', { type: 'button', class: 'approve-batch primary' }, 'Approve all ' + cards.length);
      btn.addEventListener('click', async () => {
        btn.disabled = true;
        for (const card of cards) {
          if (card.isConnected && !card.classList.contains('decided')) await card.approveInBatch();
        }
      });
      box.append(el('p', { class: 'batch' }, 'Run ', runLink(run), ' waits for ' + cards.length + ' calls of one turn, each shown below: ', btn));
    }
  }

  // notify raises a browser notification for each new approval, once the
  // person has allowed notifications (never asked for unprompted). The
  // text is the tool and the run: a notification shows text only.
  function notify(fresh) {
    const N = window.Notification;
    if (!N || N.permission !== 'granted') return;
    for (const a of fresh.slice(0, 5)) {
      try {
        new N('tollgate: approval needed', { body: visible(a.tool) + ' in run ' + a.runId, tag: a.id });
      } catch (e) {
        return; // a browser that only notifies from a service worker
      }
    }
  }

  // showNotifyState shows the notification button or what was chosen.
  function showNotifyState() {
    const N = window.Notification;
    const btn = $('notify');
    btn.hidden = !N || N.permission !== 'default';
    let state = '';
    if (!N) state = 'This browser cannot notify.';
    else if (N.permission === 'granted') state = 'New approvals raise a notification.';
    else if (N.permission === 'denied') state = 'Notifications are blocked for this page.';
    setText($('notify-state'), state);
  }

  async function askNotify() {
    const N = window.Notification;
    if (!N) return;
    try { await N.requestPermission(); } catch (e) { /* refused */ }
    showNotifyState();
  }

  // removeCard takes a card off the list; if it held the focus, the focus
  // goes to the list's heading rather than to the end of the page.
  function removeCard(card) {
    if (!card.isConnected) return;
    const had = card.contains(document.activeElement);
    card.remove();
    if (had) $('approvals-heading').focus();
  }

  function cardOf(id) {
    for (const c of $('approvals').children) {
      if (c.dataset.approvalId === id) return c;
    }
    return null;
  }

  function hintsText(h) {
    if (!h) return 'unknown (treated as mutating)';
    const parts = [];
    if (h.readOnly) parts.push('read-only');
    if (h.destructive && !h.readOnly) parts.push('destructive');
    if (h.idempotent) parts.push('idempotent');
    if (h.openWorld) parts.push('open world');
    return parts.length ? parts.join(', ') : 'none (mutating)';
  }

  function fact(dl, name, ...value) {
    dl.append(el('dt', {}, name), el('dd', {}, ...value));
  }

  // sourceText names what started a run: an agent of the server's
  // configuration, a Claude Code or Codex session, or the command line.
  function sourceText(source, agent) {
    switch (source) {
      case 'claude-code': return 'Claude Code session';
      case 'mcp': return 'MCP client' + (agent && agent !== 'mcp-client' ? ' ' + agent : '');
      case 'codex': return 'Codex session';
      case 'command-line': return 'command line (tollgate run)';
      default: return agent ? 'agent ' + agent : 'agent';
    }
  }

  // ruleAtLink shows where a rule is written (at, "policy.yaml:12:5"):
  // a link to that line of the policy file of agent when the server shows
  // it (GET v1/agents/NAME/policy), else the text alone.
  function ruleAtLink(agent, at) {
    const m = /:([0-9]+):[0-9]+$/.exec(at || '');
    if (!agent || !m) return el('code', { class: 'rule-at' }, at);
    return el('a', { href: '#policy=' + enc(agent) + '&line=' + m[1], class: 'rule-at policy-link' }, el('code', {}, at));
  }

  // withoutReported is a session's request text without the last prompt
  // and stated intent its agent appended ("\n\nLast user prompt: ..."),
  // which the card shows apart, marked as the agent's report; the text as
  // it is when its end is not exactly those.
  function withoutReported(prompt, c) {
    if (!c.reported) return prompt;
    let tail = '\n\n';
    if (c.prompt) tail += 'Last user prompt: ' + c.prompt;
    if (c.intent) tail += (c.prompt ? '\n' : '') + 'The model\'s stated intent: ' + c.intent;
    return prompt.endsWith(tail) ? prompt.slice(0, -tail.length) : prompt;
  }

  function runLink(id) {
    return el('a', { href: '#run=' + enc(id), class: 'run-link' }, el('code', {}, id));
  }

  // approvalCard builds the card of one pending approval: what a person
  // needs to decide, and the three ways to decide it.
  function approvalCard(a) {
    const n = ++uid;
    const ids = { h: 'ap' + n + '-h', deny: 'ap' + n + '-deny', edit: 'ap' + n + '-edit', reason: 'ap' + n + '-reason', args: 'ap' + n + '-args', err: 'ap' + n + '-err' };
    const li = el('li', { class: 'approval card' });
    li.dataset.approvalId = a.id;
    li.dataset.runId = a.runId;
    li.dataset.argsDigest = a.argsDigest || '';
    const art = el('article', { 'aria-labelledby': ids.h });
    li.append(art);

    const risk = a.risk || 'unknown';
    art.append(el('h3', { id: ids.h },
      el('span', { class: 'tool' }, a.tool),
      ' ',
      el('span', { class: 'risk risk-' + risk.replace(/_/g, '-').replace(/[^a-z-]/g, '') }, 'risk: ' + risk)));

    const cd = el('p', { class: 'countdown' }, a.expiresAt ? 'Time left: …' : 'No deadline');
    if (a.expiresAt) cd.dataset.expiresAt = a.expiresAt;
    art.append(cd);

    const questions = a.kind === 'question' && Array.isArray(a.questions) && a.questions.length ? a.questions : null;
    // An MCP server's request for input (elicitation): its ID says so
    // (mcptool: "elicitation_", the elicitation's key, a random suffix).
    const elicitation = a.kind !== 'approval' && /^elicitation_[0-9a-f]{32}_[0-9a-f]+$/.test(a.id || '');
    const dl = el('dl', { class: 'facts' });
    if (questions) {
      fact(dl, 'Asked by', 'the model, with the ', el('code', {}, a.tool || 'question'), ' tool');
    } else {
      fact(dl, 'Asked by', el('code', {}, a.askedBy || 'unknown'), a.ruleAt ? el('span', {}, ' (', ruleAtLink(a.rulePolicy, a.ruleAt), ')') : '');
      fact(dl, 'Reason', a.reason || '(none given)');
      if (a.prompt) fact(dl, 'Question', withoutReported(a.prompt, a.context || {}));
      fact(dl, 'Hints', hintsText(a.hints), a.riskFrom && a.riskFrom.startsWith('declared:') ? ' · risk declared by the policy for ' + a.riskFrom.slice(9) : '');
    }
    const c = a.context || {};
    fact(dl, 'Run', runLink(a.runId), ' · ' + sourceText(c.source || '', a.agent), a.runOwner ? ' · started by ' + a.runOwner : '');
    if (c.workspace) fact(dl, 'Workspace', el('code', {}, c.workspace));
    fact(dl, 'Call', el('code', {}, a.callId || ''), a.kind && a.kind !== 'approval' ? ' · ' + a.kind : '');
    art.append(dl);
    // A session's prompt and intent are its agent's word: tollgate did not
    // see the conversation, and says so.
    const reported = c.reported ? ' (reported by the agent, not verified)' : '';
    if (c.prompt) art.append(el('h4', { class: 'prompt-head' }, (c.reported ? 'The session\'s last prompt' : 'The run\'s prompt') + reported), el('blockquote', { class: 'prompt' }, c.prompt));
    if (c.intent) art.append(el('h4', { class: 'intent-head' }, 'The model says' + reported), el('blockquote', { class: 'intent' }, c.intent));
    if (Array.isArray(c.earlier) && c.earlier.length) {
      const ul = el('ul', { class: 'earlier' });
      for (const e of c.earlier) {
        ul.append(el('li', {}, String(e.outcome || ''), e.by ? ' by ' : '', e.by ? el('code', {}, e.by) : '', e.reason ? ': ' + e.reason : '',
          e.args ? el('code', { class: 'earlier-args' }, ' ' + JSON.stringify(e.args)) : ''));
      }
      art.append(el('h4', {}, 'Earlier in this run: ' + visible(a.tool)), ul);
    }

    const pretty = a.argumentsPretty || (a.arguments ? JSON.stringify(a.arguments, null, 2) : '{}');
    const answerForm = questions ? questionForm(questions, n) : null;
    if (answerForm) {
      art.append(answerForm.node);
    } else {
      art.append(el('h4', {}, 'Arguments'));
      if (hasHidden(pretty)) {
        art.append(el('p', { class: 'warning' }, 'The arguments hold invisible or direction-changing characters, shown as \\u{…}.'));
      }
      art.append(el('pre', { class: 'args', tabindex: '0', 'aria-label': 'Arguments of ' + visible(a.tool) }, pretty));
    }

    const decider = can('approver');
    const actions = el('div', { class: 'actions' });
    const approveBtn = el('button', { type: 'button', class: (questions ? 'answer' : 'approve') + ' primary' }, questions ? 'Answer' : 'Approve');
    const denyOpen = el('button', { type: 'button', class: 'deny-open', 'aria-expanded': 'false', 'aria-controls': ids.deny }, questions ? 'Decline…' : 'Deny…');
    const editOpen = el('button', { type: 'button', class: 'edit-open', 'aria-expanded': 'false', 'aria-controls': ids.edit }, 'Edit arguments…');
    actions.append(approveBtn, denyOpen);
    // The server is told decline or cancel, kept apart as MCP keeps them;
    // Deny… ends the call without telling the server anything.
    const declineBtn = el('button', { type: 'button', class: 'elicit-decline' }, 'Decline the server\'s request');
    const cancelBtn = el('button', { type: 'button', class: 'elicit-cancel' }, 'Cancel the server\'s request');
    if (elicitation) {
      denyOpen.textContent = 'Stop the call…';
      actions.append(declineBtn, cancelBtn);
    }
    const editable = (!a.kind || a.kind === 'approval') && !questions;
    if (editable) actions.append(editOpen);
    art.append(actions);
    if (!decider) {
      for (const b of [approveBtn, denyOpen, editOpen, declineBtn, cancelBtn]) b.disabled = true;
      art.append(el('p', { class: 'help' }, 'Deciding needs the approver role; this token has ' + ((me && me.roles) || []).join(', ') + '.'));
    }

    // Deny with a reason.
    const denyForm = el('form', { id: ids.deny, class: 'deny-form', novalidate: true });
    denyForm.hidden = true;
    const reason = el('textarea', { id: ids.reason, class: 'reason', rows: '2', maxlength: '2000' });
    const denyBtn = el('button', { type: 'submit', class: 'deny danger' }, questions ? 'Decline' : 'Deny');
    const denyCancel = el('button', { type: 'button', class: 'cancel' }, 'Cancel');
    denyForm.append(el('label', { for: ids.reason }, (questions ? 'Why decline?' : 'Why deny?') + ' The model is told this reason (required).'), reason, el('div', { class: 'actions' }, denyBtn, denyCancel));
    art.append(denyForm);

    // Edit the arguments, then approve.
    const editForm = el('form', { id: ids.edit, class: 'edit-form', novalidate: true });
    editForm.hidden = true;
    const argsInput = el('textarea', { id: ids.args, class: 'edited-args', rows: String(Math.min(20, pretty.split('\n').length + 2)), spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': ids.args + '-help' });
    argsInput.value = pretty;
    const approveEdited = el('button', { type: 'submit', class: 'approve-edited primary' }, 'Approve with these arguments');
    const editCancel = el('button', { type: 'button', class: 'cancel' }, 'Cancel');
    editForm.append(
      el('label', { for: ids.args }, 'Arguments to run (a JSON object)'),
      argsInput,
      el('p', { id: ids.args + '-help', class: 'help' }, 'The server checks them against the tool\'s input schema, and the run\'s policy decides on them again.'));
    if (a.inputSchema) {
      const det = el('details', { class: 'schema' }, el('summary', {}, 'Input schema of ' + visible(a.tool)), el('pre', {}, JSON.stringify(a.inputSchema, null, 2)));
      det.open = true;
      editForm.append(det);
    } else {
      editForm.append(el('p', { class: 'help' }, 'The tool has no input schema: any JSON object is accepted.'));
    }
    editForm.append(el('div', { class: 'actions' }, approveEdited, editCancel));
    art.append(editForm);

    const err = el('div', { id: ids.err, class: 'error', role: 'alert' });
    art.append(err);

    function toggle(form, opener, show) {
      setText(err, '');
      form.hidden = !show;
      opener.setAttribute('aria-expanded', String(show));
      if (show) {
        const other = form === denyForm ? [editForm, editOpen] : [denyForm, denyOpen];
        other[0].hidden = true;
        other[1].setAttribute('aria-expanded', 'false');
        form.querySelector('textarea').focus();
      } else {
        opener.focus();
      }
    }
    denyOpen.addEventListener('click', () => toggle(denyForm, denyOpen, denyForm.hidden));
    editOpen.addEventListener('click', () => toggle(editForm, editOpen, editForm.hidden));
    denyCancel.addEventListener('click', () => toggle(denyForm, denyOpen, false));
    editCancel.addEventListener('click', () => toggle(editForm, editOpen, false));
    for (const f of [denyForm, editForm]) {
      f.addEventListener('keydown', (e) => {
        if (e.key === 'Escape') toggle(f, f === denyForm ? denyOpen : editOpen, false);
      });
    }

    const buttons = [approveBtn, denyOpen, editOpen, denyBtn, approveEdited, declineBtn, cancelBtn];
    // told, when set, is what the card says was done (an elicitation
    // declined or cancelled).
    async function decide(decision, reasonText, edited, answer, told) {
      setText(err, '');
      // The digest is sent exactly as the API showed it: the approval
      // covers the arguments shown and nothing else.
      let body = JSON.stringify({ decision, reason: reasonText || undefined, argsDigest: li.dataset.argsDigest, answer });
      if (edited !== undefined) body = body.slice(0, -1) + ',"editedArgs":' + edited + '}';
      for (const b of buttons) b.disabled = true;
      li.setAttribute('aria-busy', 'true');
      try {
        const v = await api('POST', 'v1/approvals/' + enc(a.id) + '/decision', body);
        li.classList.add('decided');
        showBatches();
        const outcome = el('p', { class: 'outcome', role: 'status', tabindex: '-1' },
          (told || (v.status === 'denied' ? (questions ? 'Declined' : 'Denied') : (questions ? 'Answered' : 'Approved'))) + ': ' + visible(a.tool) + ' in run ' + a.runId + '. The run goes on by itself.');
        art.replaceChildren(outcome);
        // The button that had focus is gone: keep the keyboard where it was.
        outcome.focus();
        announce((v.status === 'denied' ? 'Denied ' : 'Approved ') + visible(a.tool) + '.');
        const leave = window.setTimeout(() => { removeCard(li); refreshApprovalsSoon(); }, 4000);
        if (!questions && !elicitation && can('approver')) {
          art.append(rememberForm(a, v.status === 'denied' ? 'deny' : 'allow', () => window.clearTimeout(leave), li));
        }
      } catch (e) {
        for (const b of buttons) b.disabled = !decider;
        li.removeAttribute('aria-busy');
        showProblem(err, e);
        if (e.status === 409 || e.status === 410) refreshApprovalsSoon();
      }
    }
    // A batch approves this card as its own Approve does: its digest, its
    // decision, its outcome shown here.
    li.approveInBatch = () => decide('approve');
    li.batchable = !answerForm && editable && decider;
    approveBtn.addEventListener('click', () => {
      if (!answerForm) {
        decide('approve');
        return;
      }
      const got = answerForm.answers();
      if (got.missing !== null) {
        setText(err, 'Answer question ' + (got.missing + 1) + ' first: pick an option or write your own answer.');
        got.focus();
        return;
      }
      decide('approve', '', undefined, { answers: got.answers });
    });
    declineBtn.addEventListener('click', () => decide('approve', '', undefined, { action: 'decline' }, 'The server is told decline'));
    cancelBtn.addEventListener('click', () => decide('approve', '', undefined, { action: 'cancel' }, 'The server is told cancel'));
    denyForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const why = reason.value.trim();
      if (!why) {
        setText(err, 'Give a reason: the model is told it.');
        reason.setAttribute('aria-invalid', 'true');
        reason.focus();
        return;
      }
      reason.removeAttribute('aria-invalid');
      decide('deny', why);
    });
    editForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = argsInput.value.trim();
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch (x) {
        setText(err, 'The arguments are not JSON: ' + x.message);
        argsInput.setAttribute('aria-invalid', 'true');
        argsInput.focus();
        return;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        setText(err, 'The arguments must be a JSON object ({...}).');
        argsInput.setAttribute('aria-invalid', 'true');
        argsInput.focus();
        return;
      }
      argsInput.removeAttribute('aria-invalid');
      // The text as typed (not re-encoded), so that large numbers keep
      // their digits.
      decide('approve', '', text);
    });
    return li;
  }

  // questionForm builds the answer form of a question request: for each
  // question its options (radio buttons, or checkboxes when it takes
  // several answers) and a field for the person's own words. answers()
  // returns {answers, missing, focus}: one list per question, and the index
  // of the first question left unanswered (null when none is).
  function questionForm(questions, n) {
    const node = el('div', { class: 'questions' });
    const reads = [];
    questions.forEach((q, i) => {
      const name = 'ap' + n + '-q' + i;
      const fs = el('fieldset', { class: 'question' });
      fs.append(el('legend', {}, q.header ? el('span', { class: 'q-header' }, q.header + ': ') : null, el('span', { class: 'q-text' }, q.question)));
      const boxes = [];
      (q.options || []).forEach((o, j) => {
        const id = name + '-o' + j;
        const box = el('input', { type: q.multiple ? 'checkbox' : 'radio', name, id, class: 'q-option' });
        box.value = o.label;
        boxes.push(box);
        fs.append(el('div', { class: 'option' }, box, el('label', { for: id }, o.label, o.description ? el('span', { class: 'help' }, ' — ' + o.description) : null)));
      });
      const ownID = name + '-own';
      const own = el('input', { type: 'text', id: ownID, class: 'q-own', maxlength: '2000', autocomplete: 'off' });
      fs.append(el('label', { for: ownID, class: 'own' }, boxes.length ? 'Or in your own words' + (q.multiple ? ' (added to the choices)' : '') : 'Your answer'), own);
      if (!q.multiple) {
        // One answer: own words replace a picked option, and the reverse.
        own.addEventListener('input', () => { if (own.value.trim()) for (const b of boxes) b.checked = false; });
        for (const b of boxes) b.addEventListener('change', () => { if (b.checked) own.value = ''; });
      }
      node.append(fs);
      reads.push(() => {
        const picked = boxes.filter((b) => b.checked).map((b) => b.value);
        const words = own.value.trim();
        if (words) picked.push(words);
        return { picked, first: boxes[0] || own };
      });
    });
    return {
      node,
      answers() {
        const answers = [];
        for (let i = 0; i < reads.length; i++) {
          const r = reads[i]();
          if (!r.picked.length) return { answers, missing: i, focus: () => r.first.focus() };
          answers.push(r.picked);
        }
        return { answers, missing: null, focus: () => {} };
      },
    };
  }

  // showProblem shows an API error (an RFC 9457 problem) in box.
  function showProblem(box, e) {
    box.replaceChildren();
    const p = e.problem;
    const title = p && p.title && p.title !== 'about:blank' ? p.title + ': ' : '';
    box.append(el('p', { class: 'detail' }, title + e.message));
    if (p && Array.isArray(p.errors) && p.errors.length) {
      const ul = el('ul', { class: 'problem-errors' });
      for (const x of p.errors) ul.append(el('li', {}, String(x)));
      box.append(ul);
    }
  }

  // tick updates every countdown, once a second.
  function tick() {
    const now = Date.now();
    for (const cd of document.querySelectorAll('.approval .countdown')) {
      let deadline = Number(cd.dataset.deadline || 0);
      if (!deadline && cd.dataset.expiresAt) deadline = Date.parse(cd.dataset.expiresAt);
      if (!deadline) continue;
      const left = Math.floor((deadline - now) / 1000);
      if (left <= 0) {
        cd.textContent = 'Expired: the run goes on without this call.';
        cd.classList.add('expired');
        const card = cd.closest('.approval');
        for (const b of card.querySelectorAll('button.approve, button.answer, button.approve-edited, button.deny')) b.disabled = true;
        continue;
      }
      const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      const mmss = String(m).padStart(h ? 2 : 1, '0') + ':' + String(s).padStart(2, '0');
      cd.textContent = 'Time left: ' + (h ? h + ':' : '') + mmss;
      cd.classList.toggle('soon', left < 60);
    }
  }

  // ---- runs ----------------------------------------------------------

  function when(t) {
    const d = new Date(t);
    return isNaN(d) ? '' : d.toLocaleString();
  }

  async function refreshRuns() {
    if (!token) return;
    let page;
    try {
      page = await api('GET', 'v1/runs?limit=20&order=newest');
    } catch (e) {
      return;
    }
    // Update in place: a link that has the focus keeps it.
    const list = $('runs');
    const have = new Map();
    for (const li of list.children) have.set(li.dataset.runId, li);
    const keep = new Set();
    let i = 0;
    for (const r of page.runs || []) {
      keep.add(r.id);
      let li = have.get(r.id);
      if (!li) {
        li = el('li', {}, runLink(r.id), ' ', el('span', { class: 'status' }), el('span', { class: 'about' }));
        li.dataset.runId = r.id;
      }
      li.className = 'run status-' + String(r.status).replace(/[^a-z]/g, '');
      setText(li.querySelector('.status'), r.status);
      setText(li.querySelector('.about'), ' · ' + sourceText(r.source || '', r.agent) + (r.owner ? ' · ' + r.owner : '') + ' · ' + when(r.createdAt));
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
      i++;
    }
    for (const li of Array.from(list.children)) {
      if (!keep.has(li.dataset.runId)) li.remove();
    }
    $('runs-empty').hidden = list.children.length > 0;
  }

  // refreshShadow shows how often each shadow rule would have voted.
  async function refreshShadow() {
    if (!token) return;
    let page;
    try {
      page = await api('GET', 'v1/shadow');
    } catch (e) {
      return;
    }
    const list = $('shadow-counts');
    list.replaceChildren();
    for (const c of page.rules || []) {
      list.append(el('li', {}, el('code', {}, c.rule), ' would ' + c.decision + ': ' + c.count + ' call' + (c.count === 1 ? '' : 's')));
    }
    $('shadow-empty').hidden = list.children.length > 0;
  }

  // ---- the rule layer ------------------------------------------------

  // rememberForm is what a decided card offers: remember the decision as a
  // rule of the tenant's layer. Asking for it keeps the card (stay) and
  // shows the rule proposed, as the YAML it adds; an administrator accepts
  // it in the "Rule layer" section.
  function rememberForm(a, effect, stay, li) {
    const box = el('div', { class: 'remember' });
    const btn = el('button', { type: 'button', class: 'remember-open' }, effect === 'deny' ? 'Remember: always deny…' : 'Remember: always allow…');
    const err = el('div', { class: 'error', role: 'alert' });
    box.append(btn, err);
    btn.addEventListener('click', async () => {
      stay();
      btn.disabled = true;
      setText(err, '');
      try {
        const r = await api('POST', 'v1/rules/proposals', JSON.stringify({ approval: a.id, effect }));
        const close = el('button', { type: 'button', class: 'remember-close' }, 'Close');
        close.addEventListener('click', () => { removeCard(li); refreshApprovalsSoon(); });
        box.replaceChildren(
          el('p', { class: 'help', role: 'status' }, 'Proposed as rule ', el('code', {}, r.id), ': it adds this to the rule layer once an administrator accepts it.'),
          el('pre', { class: 'text proposal-yaml', tabindex: '0' }, r.text),
          close);
        refreshLayer();
      } catch (e) {
        btn.disabled = false;
        showProblem(err, e);
      }
    });
    return box;
  }

  // refreshLayer shows the tenant's rule layer: its proposals (which an
  // administrator accepts or drops), the rules in force and the history.
  async function refreshLayer() {
    if (!token) return;
    let l;
    try {
      l = await api('GET', 'v1/rules');
    } catch (e) {
      if (e.status !== 501) showProblem($('layer-error'), e);
      return;
    }
    $('layer').hidden = false;
    setText($('layer-version'), 'version ' + l.version);
    const admin = can('admin');
    const show = (list, rules, proposed) => {
      list.replaceChildren();
      for (const r of rules || []) {
        const li = el('li', { class: 'layer-rule' },
          el('p', {}, el('code', {}, r.id), ' · ' + r.effect + ' ' + visible(r.tool) +
            (proposed ? ' · proposed by ' + principal(r.proposedBy) : ' · in force since version ' + r.version + ', accepted by ' + principal(r.acceptedBy))),
          el('pre', { class: 'text' }, r.text));
        li.dataset.ruleId = r.id;
        if (admin) {
          const acts = el('div', { class: 'actions' });
          if (proposed) {
            const ok = el('button', { type: 'button', class: 'accept' }, 'Accept');
            ok.addEventListener('click', () => changeRule('POST', 'v1/rules/' + enc(r.id) + '/accept'));
            acts.append(ok);
          }
          const rm = el('button', { type: 'button', class: 'remove' }, proposed ? 'Drop' : 'Remove');
          rm.addEventListener('click', () => changeRule('DELETE', 'v1/rules/' + enc(r.id)));
          acts.append(rm);
          li.append(acts);
        }
        list.append(li);
      }
    };
    show($('layer-proposed'), l.proposed, true);
    show($('layer-rules'), l.rules, false);
    $('layer-proposed-empty').hidden = (l.proposed || []).length > 0;
    $('layer-rules-empty').hidden = (l.rules || []).length > 0;
    const unsealed = (l.unsealed || []).map((r) => r.id);
    if (unsealed.length) setText($('layer-error'), 'Not applied (the store holds them as accepted, but their seal is missing or wrong): ' + unsealed.join(', '));
    const hist = $('layer-history');
    hist.replaceChildren();
    for (const c of l.history || []) {
      hist.append(el('li', { id: 'layer-v' + c.version }, 'version ' + c.version + ': ' + (c.action === 'accept' ? 'accepted ' : 'removed ') + c.effect + ' rule ',
        el('code', {}, c.ruleId), ' (' + visible(c.tool) + ') by ' + principal(c.by) + ' · ' + when(c.at)));
    }
    $('layer-history-empty').hidden = hist.children.length > 0;
  }

  async function changeRule(method, path) {
    setText($('layer-error'), '');
    try {
      await api(method, path);
    } catch (e) {
      showProblem($('layer-error'), e);
    }
    refreshLayer();
  }

  // ---- audit ---------------------------------------------------------

  // auditQuery is the query of the audit form's fields.
  function auditQuery() {
    const q = new URLSearchParams();
    for (const [name, id] of [['tool', 'audit-tool'], ['rule', 'audit-rule'], ['person', 'audit-person'], ['source', 'audit-source'], ['outcome', 'audit-outcome'], ['since', 'audit-since']]) {
      const v = $(id).value.trim();
      if (v) q.set(name, v);
    }
    return q;
  }

  let auditURL = '';

  // searchAudit shows the decisions the form selects, each with the rule
  // that decided or asked (its file:line, or the rule layer's version,
  // linked to the layer's history), and makes the export link: the same
  // search as JSON Lines, fetched with the token (a plain link would carry
  // none).
  async function searchAudit(e) {
    if (e) e.preventDefault();
    const err = $('audit-error');
    setText(err, '');
    const q = auditQuery();
    $('audit-submit').disabled = true;
    try {
      const page = await api('GET', 'v1/audit?' + q.toString());
      const body = $('audit-results').querySelector('tbody');
      body.replaceChildren();
      for (const x of page.entries || []) {
        let rule = '';
        if (x.layerVersion) {
          rule = el('a', { href: '#layer-v' + x.layerVersion, class: 'layer-link' }, 'rule layer v' + x.layerVersion);
        } else if (x.ruleAt) {
          rule = ruleAtLink(x.rulePolicy, x.ruleAt);
        }
        body.append(el('tr', { class: 'audit-entry' },
          el('td', {}, when(x.time)), el('td', {}, runLink(x.runId)), el('td', {}, el('code', {}, x.tool)),
          el('td', { class: 'outcome-' + String(x.outcome).replace(/[^a-z]/g, '') }, x.outcome),
          el('td', {}, x.by + (x.actor ? ' (given by ' + x.actor + ')' : '')), el('td', { class: 'rule' }, rule), el('td', {}, x.reason || '')));
      }
      const n = (page.entries || []).length;
      $('audit-results').hidden = n === 0;
      setText($('audit-count'), n + ' decision' + (n === 1 ? '' : 's') + (page.truncated ? ' (more match: narrow the search)' : ''));
      q.set('format', 'jsonl');
      const resp = await fetch('v1/audit?' + q.toString(), { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store', credentials: 'omit' });
      if (!resp.ok) throw new APIError(resp.status, null, resp.status + ' ' + resp.statusText);
      const lines = await resp.text();
      if (auditURL) URL.revokeObjectURL(auditURL);
      auditURL = URL.createObjectURL(new Blob([lines], { type: 'application/jsonl' }));
      const a = $('audit-export');
      a.href = auditURL;
      const count = lines.split('\n').filter((l) => l !== '').length;
      setText(a, 'Export as JSON Lines (' + count + ' line' + (count === 1 ? '' : 's') + ')');
      a.hidden = false;
    } catch (x) {
      showProblem(err, x);
    } finally {
      $('audit-submit').disabled = false;
    }
  }

  // replayPolicy replays the candidate policy of the form on the calls
  // recorded in the tenant and shows what it changes.
  async function replayPolicy(e) {
    e.preventDefault();
    const err = $('replay-error');
    const out = $('replay-result');
    setText(err, '');
    const body = { policy: $('replay-policy').value };
    const since = $('replay-since').value.trim();
    if (since) body.since = since;
    $('replay-submit').disabled = true;
    try {
      const r = await api('POST', 'v1/policy/replay', JSON.stringify(body));
      setText(out, r.text);
      out.hidden = false;
    } catch (x) {
      out.hidden = true;
      showProblem(err, x);
    } finally {
      $('replay-submit').disabled = false;
    }
  }

  // loadAgents fills the start form's agents, for operators.
  async function loadAgents() {
    const section = $('start');
    section.hidden = true;
    if (!can('operator')) return;
    let list;
    try {
      list = await api('GET', 'v1/agents');
    } catch (e) {
      return;
    }
    const agents = Array.isArray(list) ? list : (list && list.agents) || [];
    const select = $('start-agent');
    select.replaceChildren();
    for (const a of agents) {
      const o = el('option', {}, a.name + (a.model ? ' (' + a.model + ')' : ''));
      o.value = a.name;
      select.append(o);
    }
    section.hidden = agents.length === 0;
  }

  // loadMCPLogins lists the agents' OAuth MCP servers, for approvers, each
  // with a link that starts the tenant's login (POST v1/mcp/logins) and
  // opens the authorization server's page.
  async function loadMCPLogins() {
    const section = $('mcp-logins');
    section.hidden = true;
    if (!can('approver')) return;
    let list;
    try {
      list = await api('GET', 'v1/mcp/logins');
    } catch (e) {
      return;
    }
    const ul = $('mcp-logins-list');
    ul.replaceChildren();
    for (const s of Array.isArray(list) ? list : []) {
      const link = el('a', { href: '#', class: 'mcp-login' }, s.loggedIn ? 'Log in again' : 'Log in');
      link.addEventListener('click', (e) => { e.preventDefault(); startMCPLogin(s); });
      ul.append(el('li', {}, el('code', {}, s.server), ' (agent ' + s.agent + ', ' + s.url + '): ',
        s.loggedIn ? 'logged in. ' : 'not logged in. ', link));
    }
    section.hidden = ul.children.length === 0;
  }

  async function startMCPLogin(s) {
    const err = $('mcp-logins-error');
    setText(err, '');
    try {
      const r = await api('POST', 'v1/mcp/logins', JSON.stringify({ agent: s.agent, server: s.server }), undefined, true);
      const u = new URL(r.authorizationUrl);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('not a web address: ' + r.authorizationUrl);
      location.assign(u.href);
    } catch (x) {
      showProblem(err, x);
    }
  }

  async function startRun(e) {
    e.preventDefault();
    const prompt = $('start-prompt').value;
    const err = $('start-error');
    setText(err, '');
    if (!prompt.trim()) {
      setText(err, 'Write a prompt first.');
      $('start-prompt').focus();
      return;
    }
    const button = $('start-submit');
    button.disabled = true;
    // One key per submission: a retried request starts no second run.
    const key = window.crypto && crypto.randomUUID ? { 'Idempotency-Key': crypto.randomUUID() } : undefined;
    try {
      const r = await api('POST', 'v1/runs', JSON.stringify({ agent: $('start-agent').value, prompt }), key);
      $('start-prompt').value = '';
      announce('Started run ' + r.id + '.');
      refreshRunsSoon();
      location.hash = '#run=' + enc(r.id);
    } catch (x) {
      showProblem(err, x);
    } finally {
      button.disabled = false;
    }
  }

  function closeRunStream() {
    if (runStream) { runStream.close(); runStream = null; }
  }

  function openRun(id) {
    if (!token) return;
    openRunID = id;
    const view = $('run-view');
    view.hidden = false;
    setText($('run-id'), id);
    $('run-facts').replaceChildren();
    $('run-events').replaceChildren();
    $('run-calls').querySelector('tbody').replaceChildren();
    setText($('run-result'), '');
    setText($('run-error'), '');
    closeRunStream();
    loadRun(id);
    runStream = stream('&run=' + enc(id), (ev) => {
      if (ev.runId && ev.runId !== openRunID) return;
      addRunEvent(ev);
      refreshRunSoon();
      // The server ends a run's stream after its end: nothing follows.
      if (ev.type === 'run.finished' || ev.type === 'run.cancelled') closeRunStream();
    }, () => {});
    $('run-heading').focus();
  }

  function closeRun() {
    openRunID = '';
    closeRunStream();
    $('run-view').hidden = true;
    if (location.hash.startsWith('#run=')) history.replaceState(null, '', location.pathname + location.search);
  }

  async function loadRun(id) {
    let r;
    try {
      r = await api('GET', 'v1/runs/' + enc(id));
    } catch (e) {
      if (id === openRunID) showProblem($('run-error'), e);
      return;
    }
    if (id !== openRunID) return;
    setText($('run-error'), '');
    const dl = $('run-facts');
    dl.replaceChildren();
    fact(dl, 'Status', el('span', { class: 'status run-status' }, r.status));
    fact(dl, 'Source', sourceText(r.source || '', r.agent));
    if (r.owner) fact(dl, 'Started by', r.owner);
    if (r.autonomy) fact(dl, 'Autonomy', r.autonomy);
    fact(dl, 'Created', when(r.createdAt));
    fact(dl, 'Updated', when(r.updatedAt));
    if (r.pending && r.pending.length) fact(dl, 'Waiting for', r.pending.length + ' approval' + (r.pending.length > 1 ? 's' : '') + ' (above)');
    const result = r.text || (r.reason ? 'Reason: ' + r.reason : '');
    setText($('run-result'), result || (r.status === 'done' ? '(no text)' : '(not finished)'));
    const finished = ['done', 'incomplete', 'error', 'cancelled'].includes(r.status);
    $('run-cancel').hidden = finished || !can('operator');

    const body = $('run-calls').querySelector('tbody');
    body.replaceChildren();
    for (const c of r.toolCalls || []) {
      const args = c.args ? JSON.stringify(c.args, null, 2) : '';
      const requested = c.requestedArgs ? JSON.stringify(c.requestedArgs, null, 2) : '';
      const argCell = el('td', {}, el('pre', {}, args));
      if (requested && requested !== args) argCell.append(el('p', { class: 'help' }, 'The model asked for:'), el('pre', {}, requested));
      const d = c.decision || {};
      const votes = el('ul', { class: 'votes' });
      for (const v of d.votes || []) votes.append(el('li', {}, el('code', {}, principal(v.source)), v.actor ? ' (given by ' + principal(v.actor) + ')' : '', ': ', v.decision, v.reason ? ' (' + v.reason + ')' : ''));
      body.append(el('tr', { class: 'call' },
        el('th', { scope: 'row' }, c.name, c.ran ? '' : ' (not run)'),
        argCell,
        el('td', { class: 'decision' }, String(d.outcome || ''), d.by ? ' by ' : '', d.by ? el('code', {}, principal(d.by)) : '',
          d.actor ? ' (given by ' : '', d.actor ? el('code', {}, principal(d.actor)) : '', d.actor ? ')' : '', d.reason ? ': ' + d.reason : ''),
        el('td', {}, votes),
        el('td', {}, el('pre', { class: c.isError ? 'output error' : 'output' }, c.output || ''))));
    }
    $('run-calls').hidden = body.children.length === 0;
    $('run-calls-empty').hidden = body.children.length > 0;
  }

  // principal is the text form of who decided or voted: {kind, name} as
  // "kind:name" (text from records written before principals were typed is
  // shown as it is).
  function principal(p) {
    if (!p || typeof p !== 'object') return p ? String(p) : '';
    return p.name ? p.kind + ':' + p.name : String(p.kind || '');
  }

  // decider is who decided, and who acted on their behalf when someone did
  // (an administrator answering for a person): "person:alice (given by
  // person:root)".
  function decider(by, actor) {
    const b = principal(by);
    return actor ? b + ' (given by ' + principal(actor) + ')' : b;
  }

  // eventSummary is one line about a stored event.
  function eventSummary(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case 'tool.call': return d.call ? d.call.name : '';
      case 'tool.decided': {
        const x = d.decision || {};
        return [x.outcome, x.by ? 'by ' + decider(x.by, x.actor) : '', x.reason || ''].filter(Boolean).join(' ');
      }
      case 'approval.requested': return d.request ? (d.request.tool || d.request.kind || '') : '';
      case 'tool.finished': return d.record ? d.record.name + (d.record.ran ? ' ran' : ' did not run') + (d.record.isError ? ' (error)' : '') : '';
      case 'run.halted': case 'run.finished': case 'run.cancelled': return [d.status, d.reason].filter(Boolean).join(': ');
      case 'approval.decided': return [d.status || d.decision, decider(d.by || d.decidedBy, d.actor)].filter(Boolean).join(' by ');
      case 'autonomy.changed': return (d.level || 'default') + (d.by ? ' by ' + d.by : '');
      default: return '';
    }
  }

  function addRunEvent(ev) {
    const list = $('run-events');
    const t = new Date(ev.time);
    list.append(el('li', { class: 'event' },
      el('time', { datetime: isNaN(t) ? false : t.toISOString() }, isNaN(t) ? '' : t.toLocaleTimeString()), ' ',
      el('code', { class: 'type' }, ev.type), ' ', eventSummary(ev)));
    while (list.children.length > MAX_RUN_EVENTS) list.firstElementChild.remove();
  }

  // openPolicy shows the policy file of agent, line by line, and marks
  // and scrolls to line (1-based; 0 for none).
  async function openPolicy(agent, line) {
    const view = $('policy-view');
    const list = $('policy-lines');
    view.hidden = false;
    setText($('policy-agent'), agent);
    setText($('policy-file'), '');
    setText($('policy-error'), '');
    list.replaceChildren();
    let p;
    try {
      p = await api('GET', 'v1/agents/' + enc(agent) + '/policy');
    } catch (e) {
      showProblem($('policy-error'), e);
      $('policy-heading').focus();
      return;
    }
    setText($('policy-file'), p.file);
    let target = null;
    p.text.replace(/\n$/, '').split('\n').forEach((text, i) => {
      const li = el('li', { id: 'policy-L' + (i + 1) }, text);
      if (i + 1 === line) {
        li.className = 'target';
        li.setAttribute('aria-current', 'true');
        li.tabIndex = -1;
        target = li;
      }
      list.append(li);
    });
    if (target) {
      target.scrollIntoView({ block: 'center' });
      target.focus();
    } else {
      $('policy-heading').focus();
    }
  }

  function closePolicy() {
    $('policy-view').hidden = true;
    if (location.hash.startsWith('#policy=')) history.replaceState(null, '', location.pathname + location.search);
  }

  function routeFromHash() {
    if (location.hash.startsWith('#policy=')) {
      const q = new URLSearchParams(location.hash.slice(1));
      const line = Number(q.get('line') || 0);
      openPolicy(q.get('policy') || '', Number.isInteger(line) ? line : 0);
      return;
    }
    const m = /^#run=(.+)$/.exec(location.hash);
    if (m) {
      let id;
      try { id = decodeURIComponent(m[1]); } catch (e) { return; }
      if (id !== openRunID) openRun(id);
    }
  }

  // ---- start ---------------------------------------------------------

  document.addEventListener('DOMContentLoaded', () => {
    $('signin-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const t = $('token').value.trim();
      if (!t) {
        setText($('signin-error'), 'Type a token first.');
        $('token').focus();
        return;
      }
      signIn(t);
    });
    $('signout').addEventListener('click', () => signOut(''));
    $('notify').addEventListener('click', askNotify);
    showNotifyState();
    $('start-form').addEventListener('submit', startRun);
    $('replay-form').addEventListener('submit', replayPolicy);
    $('audit-form').addEventListener('submit', searchAudit);
    $('run-close').addEventListener('click', closeRun);
    $('policy-close').addEventListener('click', closePolicy);
    $('run-cancel').addEventListener('click', async () => {
      if (!openRunID) return;
      try {
        await api('POST', 'v1/runs/' + enc(openRunID) + '/cancel', '{}');
        refreshRunSoon();
      } catch (e) {
        showProblem($('run-error'), e);
      }
    });
    window.addEventListener('hashchange', routeFromHash);
    window.setInterval(tick, 1000);
    if (token) signIn(token); else showSignIn('');
  });
})();
