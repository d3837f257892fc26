// mnemos inspector: a single page over the public /v1 API. Every read and every action is an
// API call with the operator's key; the page holds no data of its own. Text from the server is
// only ever inserted as text nodes (never as HTML), so a memory cannot inject markup.
'use strict';

(() => {
  const KEY_STORAGE = 'mnemos.apiKey';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const main = document.getElementById('main');
  const statusBox = document.getElementById('status');

  // ---- DOM helpers ------------------------------------------------------------------------

  /** An element with attributes (`on*` are listeners, `class`, `text`) and children. */
  function h(tag, attrs, ...children) {
    return build(document.createElement(tag), attrs, children);
  }

  /** An SVG element, same conventions as `h`. */
  function s(tag, attrs, ...children) {
    return build(document.createElementNS(SVG_NS, tag), attrs, children);
  }

  function build(el, attrs, children) {
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
      else if (name === 'text') el.textContent = String(value);
      else if (name === 'class') el.setAttribute('class', value);
      else el.setAttribute(name, value === true ? '' : String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function fmt(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '—';
    if (n === 0) return '0';
    const a = Math.abs(n);
    if (a >= 1000) return n.toFixed(0);
    if (a >= 100) return n.toFixed(1);
    return String(Number(n.toPrecision(4)));
  }

  /** "2024-05-08 13:56 UTC · round 12" from a `{time, round}` moment. */
  function when(moment) {
    if (!moment) return '—';
    return `${isoShort(moment.time)} · round ${moment.round}`;
  }

  function isoShort(iso) {
    return iso ? iso.replace('T', ' ').slice(0, 16) + ' UTC' : '—';
  }

  function clip(text, max) {
    const chars = Array.from(text || '');
    return chars.length > max ? chars.slice(0, max).join('') + '…' : chars.join('');
  }

  function pill(text, kind) {
    return h('span', { class: `pill ${kind || ''}`, text });
  }

  function table(headers, rows, attrs) {
    return h('div', { class: 'table-wrap' },
      h('table', attrs || {},
        h('thead', {}, h('tr', {}, headers.map((c) =>
          h('th', { scope: 'col', class: c.num ? 'num' : (c.narrow ? 'hide-narrow' : null), text: c.label || c })))),
        h('tbody', {}, rows)));
  }

  function message(kind, text, id) {
    return h('div', { class: `msg ${kind}`, role: kind === 'error' ? 'alert' : null, id }, text);
  }

  // A message shown until the next navigation; `navigating`: it is about the page the action
  // navigates to (e.g. "purged" on the users page), so that navigation keeps it.
  let keepFlash = false;
  function flash(kind, text, navigating) {
    keepFlash = Boolean(navigating);
    statusBox.replaceChildren(message(kind, text, 'flash'));
  }

  // ---- API --------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, text) {
      super(text);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (key) headers.Authorization = `Bearer ${key}`;
    const init = { method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const raw = await response.text();
    let data = null;
    try {
      data = raw ? JSON.parse(raw) : null;
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const error = data && data.error;
      throw new ApiError(response.status, error ? error.code : 'http',
        error ? error.message : `the server answered ${response.status}`);
    }
    return data;
  }

  const enc = encodeURIComponent;
  const userPath = (user) => `/v1/users/${enc(user)}`;

  // Each user's latest overview, whose kinds and agents fill the filter and agent fields.
  // Overviews read all of a user's memories, so other pages reuse the last one until
  // something is written or the key changes (only writes change kinds and agents).
  const overviews = new Map();
  function overviewOf(user, fresh) {
    if (fresh || !overviews.has(user)) {
      const read = api('GET', `${userPath(user)}/overview`);
      overviews.set(user, read);
      read.catch(() => {
        if (overviews.get(user) === read) overviews.delete(user);
      });
    }
    return overviews.get(user);
  }
  const wrote = () => overviews.clear();

  // ---- routing ----------------------------------------------------------------------------

  function route() {
    const raw = location.hash.replace(/^#/, '') || '/users';
    const cut = raw.indexOf('?');
    const path = cut < 0 ? raw : raw.slice(0, cut);
    const query = new URLSearchParams(cut < 0 ? '' : raw.slice(cut + 1));
    const segs = path.split('/').filter(Boolean).map((seg) => {
      try {
        return decodeURIComponent(seg);
      } catch (_) {
        return seg;
      }
    });
    return { path, segs, query };
  }

  function href(segs, query) {
    const q = query ? new URLSearchParams(query).toString() : '';
    return `#/${segs.map(enc).join('/')}${q ? `?${q}` : ''}`;
  }

  const SECTIONS = [
    ['', 'Overview'], ['memories', 'Memories'], ['search', 'Search & recall'],
    ['persona', 'Persona'], ['timeline', 'Timeline'], ['chains', 'Chains'],
    ['forgetting', 'Forgetting'], ['jobs', 'Jobs'],
  ];

  function renderNav(segs) {
    const nav = document.getElementById('user-nav');
    if (segs[0] !== 'u' || segs.length < 2) {
      nav.replaceChildren(h('a', { href: '#/users', 'aria-current': 'page', text: 'Users' }));
      return;
    }
    const user = segs[1];
    const section = segs[2] === 'memory' ? 'memories' : (segs[2] || '');
    nav.replaceChildren();
    append(nav, [
      h('a', { href: '#/users', text: 'Users' }),
      h('span', { class: 'who', text: user }),
      SECTIONS.map(([id, label]) => h('a', {
        href: href(id ? ['u', user, id] : ['u', user]),
        'aria-current': section === id ? 'page' : null,
        text: label,
      })),
    ]);
  }

  const PAGES = {
    users: () => usersPage,
    u: (segs) => {
      const section = segs[2] || '';
      if (section === '') return overviewPage;
      if (section === 'memories') return memoriesPage;
      if (section === 'memory') return memoryPage;
      if (section === 'turn') return turnPage;
      if (section === 'search') return searchPage;
      if (['persona', 'timeline', 'chains'].includes(section)) return viewPage;
      if (section === 'forgetting') return forgettingPage;
      if (section === 'jobs') return jobsPage;
      return null;
    },
  };

  let generation = 0;
  // Finished renders, on `main` as data-rendered: a page is whole once this number moves.
  let rendered = 0;
  let lastPath = null;

  async function render() {
    const current = ++generation;
    const { path, segs, query } = route();
    renderNav(segs);
    const pick = PAGES[segs[0]];
    const page = pick && pick(segs);
    main.setAttribute('aria-busy', 'true');
    let content;
    try {
      content = page ? await page(segs, query) : notFound();
    } catch (error) {
      content = failure(error);
    }
    if (current !== generation) return;
    main.replaceChildren();
    append(main, [content]);
    main.removeAttribute('aria-busy');
    main.dataset.page = segs[0] === 'u' ? (segs[2] || 'overview') : (segs[0] || 'users');
    rendered += 1;
    main.dataset.rendered = String(rendered);
    if (path !== lastPath) {
      document.title = `${(main.querySelector('h1') || {}).textContent || 'mnemos'} · mnemos inspector`;
      // Screen readers and keyboards start at the new page's content.
      main.focus({ preventScroll: true });
      window.scrollTo(0, 0);
      lastPath = path;
    }
  }

  function notFound() {
    return [h('h1', { text: 'No such page' }), h('p', {}, h('a', { href: '#/users', text: 'Back to the users' }))];
  }

  function failure(error) {
    if (error instanceof ApiError && error.status === 401) {
      return [
        h('h1', { text: 'API key needed' }),
        message('error', `The server refused the request: ${error.message}`, 'auth-error'),
        h('p', {}, 'Type an API key of your tenant in the field at the top (',
          h('code', { text: 'mnemos keys create --tenant …' }),
          '). The key is kept for this browser session only.'),
      ];
    }
    if (error instanceof ApiError) {
      return [h('h1', { text: error.status === 404 ? 'Not found' : 'The request failed' }),
        message('error', `${error.message} (${error.code}, HTTP ${error.status})`, 'page-error')];
    }
    return [h('h1', { text: 'Something went wrong' }), message('error', String(error && error.message || error), 'page-error')];
  }

  // ---- the API key ------------------------------------------------------------------------

  function setupKeyForm() {
    const form = document.getElementById('key-form');
    const input = document.getElementById('api-key');
    const showState = () => {
      input.placeholder = sessionStorage.getItem(KEY_STORAGE) ? 'key set for this session' : 'paste a key';
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      sessionStorage.setItem(KEY_STORAGE, key);
      wrote();
      input.value = '';
      showState();
      // No message here: the page drawn with the key says whether the server took it.
      statusBox.replaceChildren();
      render();
    });
    document.getElementById('forget-key').addEventListener('click', () => {
      sessionStorage.removeItem(KEY_STORAGE);
      wrote();
      showState();
      flash('ok', 'Key cleared.');
      render();
    });
    showState();
  }

  // ---- confirmation -----------------------------------------------------------------------

  /**
   * Ask before acting. `field`: an optional input ({label, value, multiline, mustEqual});
   * resolves to the field's value (or true) when confirmed, null when cancelled.
   */
  function confirmAction({ title, body, ok, field }) {
    const dialog = document.getElementById('confirm');
    const okButton = document.getElementById('confirm-ok');
    document.getElementById('confirm-title').textContent = title;
    okButton.textContent = ok;
    const parts = [h('p', {}, body)];
    let input = null;
    if (field) {
      input = field.multiline
        ? h('textarea', { id: 'confirm-input', rows: 5 })
        : h('input', { id: 'confirm-input', type: 'text', autocomplete: 'off' });
      input.value = field.value || '';
      parts.push(h('div', { class: 'field' }, h('label', { for: 'confirm-input', text: field.label }), input));
      const check = () => {
        okButton.disabled = field.mustEqual !== undefined ? input.value !== field.mustEqual : !input.value.trim();
      };
      input.addEventListener('input', check);
      check();
    } else {
      okButton.disabled = false;
    }
    document.getElementById('confirm-body').replaceChildren(...parts);
    dialog.returnValue = '';
    return new Promise((resolve) => {
      dialog.addEventListener('close', () => {
        if (dialog.returnValue !== 'ok') resolve(null);
        else resolve(input ? input.value : true);
      }, { once: true });
      dialog.showModal();
      (input || document.getElementById('confirm-cancel')).focus();
    });
  }

  // ---- users ------------------------------------------------------------------------------

  const USERS_PER_PAGE = 25;

  async function usersPage(_segs, query) {
    const { users } = await api('GET', '/v1/users');
    const find = (query.get('find') || '').toLowerCase();
    const matching = users.filter((u) => u.toLowerCase().includes(find));
    const pages = Math.max(1, Math.ceil(matching.length / USERS_PER_PAGE));
    const pageNo = Math.min(pages, Math.max(1, Number(query.get('page')) || 1));
    const shown = matching.slice((pageNo - 1) * USERS_PER_PAGE, pageNo * USERS_PER_PAGE);
    const rows = (await Promise.all(shown.map((u) => overviewOf(u, true)))).map(userRow);
    const findForm = h('form', { class: 'filters', role: 'search', onsubmit: (e) => {
      e.preventDefault();
      location.hash = href(['users'], { find: e.target.elements.find.value });
    } },
    h('div', { class: 'field' }, h('label', { for: 'find', text: 'Find a user' }),
      h('input', { id: 'find', name: 'find', type: 'search', value: query.get('find') || '' })),
    h('div', {}, h('button', { type: 'submit', text: 'Find' })));
    return [
      h('h1', { text: 'Users' }),
      h('p', { class: 'muted', text: `${users.length} user(s) in this key's tenant.` }),
      findForm,
      shown.length ? table([
        'User', { label: 'Turns', num: true }, { label: 'Sessions', num: true, narrow: true },
        { label: 'Active', num: true }, { label: 'Forgotten', num: true }, 'By kind (active / forgotten)',
        'Last activity', 'Jobs',
      ], rows, { id: 'users-table' }) : h('p', { text: 'No users yet: add turns through the API, the CLI or MCP.' }),
      pager(pageNo, pages, (n) => href(['users'], { find, page: n })),
    ];
  }

  function totals(memories) {
    let active = 0;
    let forgotten = 0;
    for (const counts of Object.values(memories || {})) {
      active += counts.active || 0;
      forgotten += counts.forgotten || 0;
    }
    return { active, forgotten };
  }

  function userRow(o) {
    const t = totals(o.memories);
    const jobs = o.jobs || {};
    return h('tr', { 'data-user': o.user },
      h('td', {}, h('a', { href: href(['u', o.user]), text: o.user })),
      h('td', { class: 'num', text: o.turns }),
      h('td', { class: 'num hide-narrow', text: o.sessions }),
      h('td', { class: 'num', text: t.active }),
      h('td', { class: 'num', text: t.forgotten }),
      h('td', { class: 'small' }, Object.entries(o.memories || {}).map(([kind, c], i) =>
        [i ? ' · ' : '', `${kind} ${c.active} / ${c.forgotten}`])),
      h('td', { class: 'small', text: when(o.last_activity) }),
      h('td', {}, jobPills(jobs)));
  }

  function jobPills(jobs) {
    const parts = ['pending', 'failed', 'stuck'].filter((s) => jobs[s]).map((s) => [pill(`${jobs[s]} ${s}`, s), ' ']);
    return parts.length ? parts : h('span', { class: 'muted', text: 'none' });
  }

  function pager(pageNo, pages, link) {
    if (pages <= 1) return null;
    return h('nav', { class: 'pager', 'aria-label': 'Pages' },
      pageNo > 1 ? h('a', { href: link(pageNo - 1), text: '← Previous' }) : null,
      h('span', { text: `page ${pageNo} of ${pages}` }),
      pageNo < pages ? h('a', { href: link(pageNo + 1), text: 'Next →' }) : null);
  }

  // ---- overview ---------------------------------------------------------------------------

  async function overviewPage(segs) {
    const user = segs[1];
    const o = await overviewOf(user, true);
    const t = totals(o.memories);
    const kinds = Object.entries(o.memories || {}).map(([kind, c]) => h('tr', {},
      h('td', {}, h('a', { href: href(['u', user, 'memories'], { kind, state: 'all' }), text: kind })),
      h('td', { class: 'num', text: c.active }), h('td', { class: 'num', text: c.forgotten })));
    return [
      h('h1', { text: user }),
      h('div', { class: 'grid' },
        h('div', { class: 'card' }, h('dl', { class: 'kv' },
          h('dt', { text: 'Turns' }), h('dd', { id: 'overview-turns', text: o.turns }),
          h('dt', { text: 'Sessions' }), h('dd', { text: o.sessions }),
          h('dt', { text: 'Agents' }), h('dd', { text: (o.agents || []).join(', ') || '—' }),
          h('dt', { text: 'Last activity' }), h('dd', { text: when(o.last_activity) }))),
        h('div', { class: 'card' }, h('dl', { class: 'kv' },
          h('dt', { text: 'Active memories' }), h('dd', { id: 'overview-active', text: t.active }),
          h('dt', { text: 'Forgotten' }), h('dd', { text: t.forgotten }),
          h('dt', { text: 'Jobs' }), h('dd', {}, jobPills(o.jobs || {}))))),
      h('h2', { text: 'Memories by kind' }),
      table(['Kind', { label: 'Active', num: true }, { label: 'Forgotten', num: true }], kinds),
      h('h2', { text: 'Danger zone' }),
      h('div', { class: 'card' },
        h('p', { text: 'Purging erases every turn, memory, history entry, vector and job of this user. It cannot be undone.' }),
        h('button', { type: 'button', class: 'danger', id: 'purge', onclick: () => purge(user), text: 'Purge this user…' })),
    ];
  }

  async function purge(user) {
    const typed = await confirmAction({
      title: `Purge ${user}?`,
      body: 'Everything of this user is erased for good. Type the user\'s name to confirm.',
      ok: 'Purge',
      field: { label: 'User name', mustEqual: user },
    });
    if (typed === null) return;
    try {
      const r = await api('DELETE', userPath(user));
      wrote();
      flash('ok', `Purged ${user}: ${r.turns} turns, ${r.memories} memories, ${r.history_entries} history entries, ${r.vectors} vectors.`, true);
      location.hash = '#/users';
    } catch (error) {
      flash('error', `Purge failed: ${error.message}`);
    }
  }

  function start() {
    setupKeyForm();
    window.addEventListener('hashchange', () => {
      if (keepFlash) keepFlash = false;
      else statusBox.replaceChildren();
      render();
    });
    render();
  }

  // ---- memories ---------------------------------------------------------------------------

  const LIST_PARAMS = ['kind', 'state', 'agent', 'session', 'meta', 'q', 'sort', 'limit', 'current', 'as_of'];
  // Cursors of the pages before the current one, per filter, so "Previous" can go back.
  const cursorTrail = new Map();

  function listQuery(query) {
    const params = new URLSearchParams();
    for (const name of LIST_PARAMS) {
      const value = (query.get(name) || '').trim();
      if (!value) continue;
      if (name === 'meta') {
        value.split(';').map((p) => p.trim()).filter(Boolean).forEach((pair) => params.append('meta', pair));
      } else {
        params.set(name, value);
      }
    }
    if (!params.has('limit')) params.set('limit', '50');
    return params;
  }

  async function memoriesPage(segs, query) {
    const user = segs[1];
    const params = listQuery(query);
    const filterKey = params.toString();
    if (query.get('cursor')) params.set('cursor', query.get('cursor'));
    const [page, overview] = await Promise.all([
      api('GET', `${userPath(user)}/memories?${params}`),
      overviewOf(user),
    ]);
    // Pages seen with these filters, by their cursors ('' = the first page); a reloaded page
    // deep in the list knows only the way back to the start.
    if (!cursorTrail.has(filterKey)) cursorTrail.set(filterKey, ['']);
    const trail = cursorTrail.get(filterKey);
    const cursor = query.get('cursor') || '';
    const position = trail.indexOf(cursor);
    const start = position < 0 ? null : position * Number(params.get('limit'));
    const rows = page.memories.map((m) => memoryRow(user, m));
    const base = Object.fromEntries(LIST_PARAMS.map((n) => [n, query.get(n) || '']).filter(([, v]) => v));
    const goTo = (c) => href(['u', user, 'memories'], c ? { ...base, cursor: c } : base);
    const next = page.next_cursor ? h('a', { href: goTo(page.next_cursor), id: 'next-page', text: 'Next page →',
      onclick: () => {
        if (position >= 0) cursorTrail.set(filterKey, [...trail.slice(0, position + 1), page.next_cursor]);
      } }) : null;
    const previous = position > 0 ? h('a', { href: goTo(trail[position - 1]), id: 'previous-page', text: '← Previous page' })
      : (cursor ? h('a', { href: goTo(''), text: '← First page' }) : null);
    const shownRange = start === null ? `showing ${page.memories.length}`
      : `showing ${start + 1}–${start + page.memories.length}`;
    return [
      h('h1', { text: `Memories of ${user}` }),
      filterForm(user, query, Object.keys(overview.memories || {})),
      h('p', { class: 'muted', id: 'list-total' }, page.total
        ? `${page.total} match(es); ${shownRange}.`
        : 'Nothing matches these filters.'),
      rows.length ? table(['Created', 'Kind', 'Text', { label: 'Scope', narrow: true }, 'State',
        { label: 'Importance', num: true, narrow: true }], rows, { id: 'memories-table' }) : null,
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, previous, next),
    ];
  }

  function filterForm(user, query, kinds) {
    const field = (name, label, control) => h('div', { class: 'field' },
      h('label', { for: `f-${name}`, text: label }), control);
    const select = (name, options) => {
      const el = h('select', { id: `f-${name}`, name },
        options.map(([value, label]) => h('option', { value, text: label })));
      el.value = query.get(name) || options[0][0];
      return el;
    };
    const input = (name, attrs) => h('input', { id: `f-${name}`, name, value: query.get(name) || '', ...attrs });
    return h('form', { class: 'filters card', role: 'search', 'aria-label': 'Filter memories', onsubmit: (e) => {
      e.preventDefault();
      const values = {};
      for (const el of e.target.elements) if (el.name && el.value.trim()) values[el.name] = el.value.trim();
      location.hash = href(['u', user, 'memories'], values);
    } },
    field('q', 'Text contains', input('q', { type: 'search', placeholder: 'e.g. coffee / 咖啡' })),
    field('kind', 'Kind', select('kind', [['', 'any kind'], ...kinds.map((k) => [k, k])])),
    field('state', 'State', select('state', [['', 'active'], ['forgotten', 'forgotten'], ['all', 'all']])),
    field('agent', 'Agent', input('agent', { type: 'text' })),
    field('session', 'Session', input('session', { type: 'text' })),
    field('meta', 'Metadata (key=value; …)', input('meta', { type: 'text', placeholder: 'speaker=Ann' })),
    field('sort', 'Sort', select('sort', [['', 'oldest first'], ['newest', 'newest first'], ['importance', 'most important first']])),
    field('current', 'Validity', select('current', [['', 'current and superseded'], ['true', 'current only']])),
    field('as_of', 'Valid on', input('as_of', { type: 'date' })),
    field('limit', 'Per page', select('limit', [['50', '50'], ['25', '25'], ['100', '100'], ['200', '200']])),
    h('div', {}, h('button', { type: 'submit', text: 'Apply' })));
  }

  function memoryRow(user, m) {
    return h('tr', { 'data-memory': m.id },
      h('td', { class: 'small', text: when(m.created) }),
      h('td', {}, pill(m.kind)),
      h('td', { class: 'text' }, h('a', { href: href(['u', user, 'memory', m.id]), text: clip(m.text, 220) })),
      h('td', { class: 'small hide-narrow', text: `${m.agent} / ${m.session}` }),
      h('td', {}, pill(m.state, m.state), m.valid_to ? [' ', pill('superseded', 'superseded')] : null,
        m.forgotten ? h('div', { class: 'small muted', text: forgetCause(m.forgotten) }) : null),
      h('td', { class: 'num hide-narrow', text: m.scores && m.scores.importance !== undefined ? fmt(m.scores.importance) : '' }));
  }

  function forgetCause(f) {
    if (!f) return '';
    if (f.by === 'preset') return `by preset ${f.preset}`;
    if (f.by === 'derived') return 'with its source';
    return 'on request';
  }

  // ---- one memory -------------------------------------------------------------------------

  async function memoryPage(segs) {
    const [, user, , id] = segs;
    const base = `${userPath(user)}/memories/${enc(id)}`;
    const [m, history, access, derived] = await Promise.all([
      api('GET', base), api('GET', `${base}/history`), api('GET', `${base}/access`), api('GET', `${base}/derived`),
    ]);
    const sources = await Promise.all(m.provenance.slice(0, 6).map((t) =>
      api('GET', `${userPath(user)}/turns/${enc(t)}?around=2`).catch((error) => ({ error, id: t }))));
    return [
      h('h1', {}, `${m.kind} memory `, pill(m.state, m.state), m.valid_to ? [' ', pill('superseded', 'superseded')] : null),
      h('div', { class: 'card' }, h('p', { class: 'memtext', id: 'memory-text', text: m.text })),
      memoryActions(user, m),
      h('h2', { text: 'Details' }),
      h('div', { class: 'grid' }, h('div', { class: 'card' }, details(user, m)), h('div', { class: 'card' }, scores(m))),
      h('h2', { text: `Where it came from (${m.provenance.length} turn${m.provenance.length === 1 ? '' : 's'})` }),
      sources.length ? sources.map((c) => dialogueCard(user, c)) : h('p', { class: 'muted', text: 'No source turns.' }),
      m.provenance.length > sources.length ? h('p', { class: 'muted', text: `…and ${m.provenance.length - sources.length} more turns.` }) : null,
      h('h2', { text: 'Derived from it' }),
      derived.memories.length
        ? table(['Created', 'Kind', 'Text', { label: 'Scope', narrow: true }, 'State', { label: 'Importance', num: true, narrow: true }],
          derived.memories.map((d) => memoryRow(user, d)), { id: 'derived-table' })
        : h('p', { class: 'muted', text: 'Nothing was built from this memory.' }),
      h('h2', { text: 'History' }),
      historyList(history),
      h('h2', { text: 'Access log' }),
      accessLog(access),
    ];
  }

  function details(user, m) {
    const meta = Object.entries(m.metadata || {});
    const f = m.forgotten;
    return h('dl', { class: 'kv' },
      h('dt', { text: 'Id' }), h('dd', { class: 'small', text: m.id }),
      h('dt', { text: 'Scope' }), h('dd', { text: `agent ${m.agent} · session ${m.session}` }),
      h('dt', { text: 'Created' }), h('dd', { text: when(m.created) }),
      h('dt', { text: 'Valid' }), h('dd', { id: 'validity', text: `from ${isoShort(m.valid_from)}${m.valid_to ? ` to ${isoShort(m.valid_to)}` : ', still valid'}` }),
      m.superseded_by ? [h('dt', { text: 'Superseded by' }), h('dd', { id: 'superseded-by' },
        h('a', { href: href(['u', user, 'memory', m.superseded_by]), text: 'the memory that replaced it' }))] : null,
      h('dt', { text: 'Said' }), h('dd', { id: 'times-said', text: `${m.times_said || 1} time(s)${m.last_said ? `, last ${isoShort(m.last_said)}` : ''}` }),
      h('dt', { text: 'Version' }), h('dd', { text: m.version }),
      h('dt', { text: 'State' }), h('dd', {}, m.state),
      f ? [h('dt', { text: 'Forgotten' }), h('dd', { id: 'forget-reason' },
        `${when(f.at)} ${forgetCause(f)}: ${f.reason}`,
        f.source ? [' (', h('a', { href: href(['u', user, 'memory', f.source]), text: 'the source' }), ')'] : null)] : null,
      h('dt', { text: 'Metadata' }), h('dd', {}, meta.length ? meta.map(([k, v], i) => [i ? ', ' : '', h('code', { text: `${k}=${v}` })]) : '—'));
  }

  function scores(m) {
    const sc = m.scores || {};
    const rows = [['Importance', sc.importance], ['Strength', sc.strength], ['Inhibition', sc.inhibition],
      ...Object.entries(sc.extra || {})];
    return h('dl', { class: 'kv', id: 'scores' },
      rows.map(([name, value]) => [h('dt', { text: name }), h('dd', { text: value === undefined ? '—' : fmt(value) })]),
      h('dt', { text: 'Recalled' }), h('dd', { text: `${m.access_count || 0} time(s)${m.last_access ? `, last ${when(m.last_access)}` : ''}` }));
  }

  function memoryActions(user, m) {
    const path = `${userPath(user)}/memories/${enc(m.id)}`;
    const edit = async () => {
      const text = await confirmAction({
        title: 'Edit this memory', body: 'Saving makes a new version; the old text stays in the history.',
        ok: 'Save new version', field: { label: 'Text', value: m.text, multiline: true },
      });
      if (text === null || text === m.text) return;
      try {
        await api('PATCH', path, { text });
        wrote();
        flash('ok', 'Saved as a new version.');
        render();
      } catch (error) {
        flash('error', `Not saved: ${error.message}`);
      }
    };
    const forget = async () => {
      const reason = await confirmAction({
        title: 'Forget this memory?', body: 'It leaves search and recall; memories built from it are forgotten too. Its history stays.',
        ok: 'Forget', field: { label: 'Reason (kept in the history)', value: 'forgotten in the inspector' },
      });
      if (reason === null) return;
      try {
        const r = await api('DELETE', `${path}?reason=${enc(reason)}`);
        wrote();
        flash('ok', `Forgotten${r.derived_forgotten ? `, with ${r.derived_forgotten} derived memories` : ''}.`);
        render();
      } catch (error) {
        flash('error', `Not forgotten: ${error.message}`);
      }
    };
    // A forgotten memory cannot be changed (the server answers 409) and forgetting it again
    // changes nothing, so it offers neither.
    if (m.state !== 'active') return null;
    return h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'edit-memory', class: 'secondary', onclick: edit, text: 'Edit…' }),
      h('button', { type: 'button', id: 'forget-memory', class: 'danger', onclick: forget, text: 'Forget…' }));
  }

  function dialogueCard(user, context) {
    if (context.error) {
      return message('error', `Turn ${context.id}: ${context.error.message}`);
    }
    const line = (t, focus) => h('li', { class: focus ? 'focus' : null, 'data-turn': t.id, 'aria-current': focus ? 'true' : null },
      h('span', { class: 'who', text: t.speaker || t.role }),
      h('span', { text: t.text }),
      h('div', { class: 'small muted' }, when(t.at), ' · ',
        h('a', { href: href(['u', user, 'turn', t.id]), text: 'in context' }),
        t.memory_id ? [' · ', h('a', { href: href(['u', user, 'memory', t.memory_id]), text: 'its memory' })] : null));
    const t = context.turn;
    return h('div', { class: 'card' },
      h('div', { class: 'small muted', text: `agent ${t.agent} · session ${t.session}` }),
      h('ul', { class: 'turns' }, context.before.map((b) => line(b, false)), line(t, true), context.after.map((a) => line(a, false))));
  }

  async function turnPage(segs, query) {
    const [, user, , id] = segs;
    const around = Number(query.get('around')) || 8;
    const context = await api('GET', `${userPath(user)}/turns/${enc(id)}?around=${around}`);
    return [
      h('h1', { text: 'A turn in its dialogue' }),
      dialogueCard(user, context),
      h('p', {}, h('a', { href: href(['u', user, 'turn', id], { around: Math.min(50, around * 2) }), text: 'Show more of the dialogue' })),
    ];
  }

  function historyList(history) {
    const items = history.map((entry, i) => {
      const before = i > 0 ? history[i - 1].text : null;
      return h('li', { class: 'card', 'data-change': entry.change },
        h('div', {}, h('strong', { text: `v${entry.version} ` }), pill(entry.change, entry.change === 'forgotten' ? 'forgotten' : ''),
          ' ', h('span', { class: 'small muted', text: when(entry.at) })),
        entry.reason ? h('div', { class: 'small', text: `reason: ${entry.reason}` }) : null,
        before === null || before === entry.text
          ? (before === null ? h('p', { class: 'memtext', text: entry.text }) : h('p', { class: 'small muted', text: 'text unchanged' }))
          : h('p', { class: 'memtext diff' }, diff(before, entry.text)));
    });
    return h('ol', { class: 'turns', id: 'history' }, items);
  }

  /** Word-level diff (one character per token for CJK text) as <del>/<ins> nodes. */
  function diff(before, after) {
    const a = tokens(before);
    const b = tokens(after);
    if (a.length * b.length > 4e6) return [h('del', { text: before }), h('ins', { text: after })];
    const rows = a.length + 1;
    const cols = b.length + 1;
    const lcs = new Uint32Array(rows * cols);
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        lcs[i * cols + j] = a[i] === b[j] ? lcs[(i + 1) * cols + j + 1] + 1
          : Math.max(lcs[(i + 1) * cols + j], lcs[i * cols + j + 1]);
      }
    }
    const out = [];
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        out.push(a[i]);
        i += 1;
        j += 1;
      } else if (j < b.length && (i === a.length || lcs[i * cols + j + 1] >= lcs[(i + 1) * cols + j])) out.push(h('ins', { text: b[j++] }));
      else out.push(h('del', { text: a[i++] }));
    }
    return out;
  }

  function tokens(text) {
    return text.match(/\s+|[\u3000-\u9fff\uf900-\ufaff\uff00-\uffef]|[^\s\u3000-\u9fff\uf900-\ufaff\uff00-\uffef]+/g) || [];
  }

  function accessLog(access) {
    if (!access.accesses.length) return h('p', { class: 'muted', id: 'access-log', text: 'Never recalled.' });
    const shown = access.accesses.slice(0, 50);
    return [
      table(['When', { label: 'Rank', num: true }], shown.map((a) =>
        h('tr', {}, h('td', { text: when(a.at) }), h('td', { class: 'num', text: a.rank }))), { id: 'access-log' }),
      access.total > shown.length ? h('p', { class: 'muted', text: `…and ${access.total - shown.length} earlier.` }) : null,
    ];
  }

  // ---- search and recall ------------------------------------------------------------------

  async function searchPage(segs, query) {
    const user = segs[1];
    const q = query.get('q') || '';
    const mode = query.get('mode') === 'recall' ? 'recall' : 'search';
    const { agents } = await overviewOf(user);
    const form = searchForm(user, query, mode, agents || []);
    if (!q.trim()) return [h('h1', { text: 'Search and recall' }), form];
    const agent = query.get('agent') || undefined;
    const number = (name) => (query.get(name) ? Number(query.get(name)) : undefined);
    const asOf = query.get('as_of') || undefined;
    const floor = number('min_relevance');
    let result;
    if (mode === 'recall') {
      const body = await api('POST', `${userPath(user)}/recall`, { query: q, agent, budget: number('budget'), as_of: asOf, min_relevance: floor });
      result = recallResult(user, body);
    } else {
      const body = await api('POST', `${userPath(user)}/search`, { query: q, agent, top_k: number('top_k'), budget: number('budget'),
        as_of: asOf, min_relevance: floor, include_superseded: query.get('include_superseded') === 'true' || undefined });
      result = searchResult(user, body);
    }
    return [h('h1', { text: 'Search and recall' }), form, result];
  }

  function searchForm(user, query, mode, agents) {
    const input = (name, label, attrs) => h('div', { class: 'field' }, h('label', { for: `s-${name}`, text: label }),
      h('input', { id: `s-${name}`, name, value: query.get(name) || '', ...attrs }));
    const modeSelect = h('select', { id: 's-mode', name: 'mode' },
      h('option', { value: 'search', text: 'search: ranked memories' }),
      h('option', { value: 'recall', text: 'recall: the agent\'s context' }));
    modeSelect.value = mode;
    const supersededSelect = h('select', { id: 's-include_superseded', name: 'include_superseded' },
      h('option', { value: '', text: 'current only' }),
      h('option', { value: 'true', text: 'include, marked' }));
    supersededSelect.value = query.get('include_superseded') || '';
    return h('form', { class: 'filters card', role: 'search', 'aria-label': 'Search memories', onsubmit: (e) => {
      e.preventDefault();
      const values = {};
      for (const el of e.target.elements) if (el.name && el.value.trim()) values[el.name] = el.value.trim();
      location.hash = href(['u', user, 'search'], values);
    } },
    input('q', 'Query', { type: 'search', required: true, placeholder: 'what does the agent need?' }),
    h('div', { class: 'field' }, h('label', { for: 's-mode', text: 'Mode' }), modeSelect),
    input('agent', 'Agent (preset for recall)', { type: 'text', placeholder: 'default', list: 's-agents' }),
    h('datalist', { id: 's-agents' }, agents.map((a) => h('option', { value: a }))),
    input('top_k', 'Hits (search)', { type: 'number', min: 1, max: 100 }),
    input('budget', 'Token budget', { type: 'number', min: 1 }),
    input('min_relevance', 'Least relevance (0–1)', { type: 'number', min: 0, max: 1, step: 0.01, placeholder: 'server default' }),
    input('as_of', 'As of (the past)', { type: 'date' }),
    h('div', { class: 'field' }, h('label', { for: 's-include_superseded', text: 'Superseded (search)' }), supersededSelect),
    h('div', {}, h('button', { type: 'submit', id: 'run-search', text: 'Run' })));
  }

  function searchResult(user, body) {
    const hits = body.hits;
    const max = (pick) => Math.max(1e-9, ...hits.map((x) => Math.abs(pick(x.breakdown) || 0)));
    const scale = {
      lexical: max((b) => b.lexical && b.lexical.score),
      dense: max((b) => b.dense && b.dense.score),
      fused: max((b) => Math.max(b.fused, b.final)),
      adjust: max((b) => Math.max(0, ...(b.adjustments || []).map((a) => Math.abs(a.delta)))),
    };
    return h('section', { 'aria-label': 'Search results', id: 'results' },
      h('p', { class: 'muted' }, `${hits.length} hit(s) from ${body.candidates} candidates. Query terms: `,
        body.query_terms.length ? body.query_terms.map((t, i) => [i ? ', ' : '', h('code', { text: t })]) : 'none'),
      hits.map((hit, i) => hitCard(user, hit, i + 1, scale)));
  }

  function hitCard(user, hit, rank, scale) {
    const b = hit.breakdown;
    const bars = [];
    const bar = (name, label, value, max, cls, note) => {
      const width = Math.min(100, (Math.abs(value) / max) * 100);
      const fill = h('span', {});
      fill.style.width = `${width}%`;
      bars.push(h('span', { text: label }),
        h('div', { class: `bar ${cls}${value < 0 ? ' negative' : ''}`, role: 'img', 'aria-label': `${label} ${fmt(value)}` }, fill),
        h('span', { class: 'value', 'data-bar': name, 'data-value': String(value), title: note || null, text: fmt(value) }));
    };
    if (b.lexical) bar('lexical', `lexical #${b.lexical.rank}`, b.lexical.score, scale.lexical, 'lexical', 'BM25 score');
    if (b.dense) bar('dense', `dense #${b.dense.rank}`, b.dense.score, scale.dense, 'dense', 'cosine similarity');
    if (b.second_hop) bar('second_hop', 'second hop', b.second_hop.added, scale.fused, 'fused', 'added through a related memory');
    if (b.context) bar('context', 'context', b.context.added, scale.fused, 'fused', 'lent by the neighbouring turn');
    if (b.speaker !== undefined) bar('speaker', 'speaker', b.speaker, scale.fused, 'fused', 'the query names its speaker');
    if (b.date !== undefined) bar('date', 'date', b.date, scale.fused, 'fused', 'the query names its date');
    bar('fused', 'fused', b.fused, scale.fused, 'fused', 'after fusion, before re-rankers');
    (b.adjustments || []).forEach((a, i) =>
      bar(`adjustment-${i}`, a.name, a.delta, scale.adjust, 'adjust', `value ${fmt(a.value)}`));
    bar('final', 'final', b.final, scale.fused, 'final', 'the hit\'s score');
    const m = hit.memory;
    return h('article', { class: 'hit', 'data-hit': m.id, 'aria-label': `hit ${rank}` },
      h('header', {}, h('strong', { text: `#${rank}` }), pill(m.kind),
        hit.superseded ? [' ', pill('superseded', 'superseded')] : null,
        h('span', { class: 'small muted', text: `score ${fmt(hit.score)}${hit.relevance !== undefined ? ` · relevance ${fmt(hit.relevance)}` : ''} · ${hit.tokens} tokens · ${when(m.created)}` })),
      h('p', { class: 'memtext' }, h('a', { href: href(['u', user, 'memory', m.id]), text: m.text })),
      hit.matched_terms.length ? h('div', { class: 'small' }, 'matched: ', hit.matched_terms.map((t, i) => [i ? ', ' : '', h('code', { text: t })])) : null,
      h('div', { class: 'bars' }, bars),
      h('details', { class: 'small' }, h('summary', { text: 'Explanation' }),
        h('ul', {}, hit.explanation.map((line) => h('li', { text: line })))));
  }

  function recallResult(user, body) {
    return h('section', { 'aria-label': 'Recalled context', id: 'results' },
      h('p', {}, 'Preset ', h('strong', { text: body.preset }), ' built ',
        h('strong', { id: 'recall-tokens', text: body.tokens }), ' tokens of context:'),
      body.notes.length ? h('ul', { class: 'small' }, body.notes.map((n) => h('li', { text: n }))) : null,
      h('pre', { class: 'context', id: 'recall-text', tabindex: 0, text: body.text }),
      h('h2', { text: 'What it is made of' }),
      body.items.length ? table(['Section', 'Kind', 'Text', { label: 'Score', num: true }, { label: 'Tokens', num: true }, { label: 'Score parts', narrow: true }],
        body.items.map((item) => h('tr', {},
          h('td', { text: item.section }), h('td', {}, pill(item.kind)),
          h('td', { class: 'text' }, h('a', { href: href(['u', user, 'memory', item.memory_id]), text: clip(item.text, 200) })),
          h('td', { class: 'num', text: fmt(item.score) }), h('td', { class: 'num', text: item.tokens }),
          h('td', { class: 'small hide-narrow', text: Object.entries(item.score_parts).map(([k, v]) => `${k} ${fmt(v)}`).join(', ') }))),
        { id: 'recall-items' }) : h('p', { class: 'muted', text: 'No memories in the context.' }));
  }

  // ---- mechanism views ---------------------------------------------------------------------

  async function viewPage(segs) {
    const [, user, view] = segs;
    let body;
    try {
      body = await api('GET', `${userPath(user)}/views/${view}`);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status === 401 || error.status === 404) throw error;
      return [h('h1', { text: titleOf(view) }), message('error', error.message, 'view-unavailable')];
    }
    const drawn = { persona: personaView, timeline: timelineView, chains: chainsView }[view](user, body.data);
    return [
      h('h1', { text: titleOf(view) }),
      drawn,
      h('details', {}, h('summary', { text: 'As text' }), h('pre', { class: 'context', text: body.text })),
    ];
  }

  function titleOf(view) {
    return { persona: 'Persona sketch', timeline: 'Plot timeline', chains: 'Memory chains' }[view];
  }

  function personaView(user, keys) {
    if (!keys || !keys.length) return h('p', { class: 'muted', id: 'view-empty', text: 'No persona keys recorded yet.' });
    const subjects = new Map();
    for (const key of keys) {
      const who = key.subject || 'unnamed subject';
      if (!subjects.has(who)) subjects.set(who, []);
      subjects.get(who).push(key);
    }
    const lastRound = Math.max(1, ...keys.flatMap((k) => [...k.current, ...k.history].map((v) => v.said_round)));
    return h('div', { class: 'persona', id: 'persona' }, [...subjects].map(([who, list]) => h('section', { class: 'card', 'aria-label': who },
      h('h2', { text: who }),
      list.map((key) => h('div', { class: 'key' },
        h('strong', { text: key.key }),
        roundStrip([...key.history, ...key.current], lastRound),
        h('ul', { class: 'turns' },
          key.current.map((v) => h('li', { class: 'focus' }, h('a', { href: href(['u', user, 'memory', v.id]), text: v.value }),
            h('span', { class: 'small muted', text: ` · round ${v.said_round}` }))),
          key.history.map((v) => h('li', {}, h('a', { class: 'old', href: href(['u', user, 'memory', v.id]), text: v.value }),
            h('span', { class: 'small muted', text: ` · round ${v.said_round}${v.reason ? ` · ${v.reason}` : ''}` }))))))))); 
  }

  /** Dots on a round axis: when each value of a key was said (filled = still held). */
  function roundStrip(values, lastRound) {
    const width = 300;
    const x = (r) => 6 + (r / lastRound) * (width - 12);
    return s('svg', { viewBox: `0 0 ${width} 16`, width, height: 16, role: 'img', 'aria-label': `said at rounds ${values.map((v) => v.said_round).join(', ')}` },
      s('line', { x1: 6, x2: width - 6, y1: 8, y2: 8, stroke: '#d7dce3' }),
      values.map((v) => s('circle', { cx: x(v.said_round), cy: 8, r: 4, fill: v.active ? '#2e7d4f' : '#fff', stroke: v.active ? '#2e7d4f' : '#a3262a' },
        s('title', { text: `${v.value} (round ${v.said_round})` }))));
  }

  function timelineView(user, nodes) {
    if (!nodes || !nodes.length) return h('p', { class: 'muted', id: 'view-empty', text: 'No plot summaries yet.' });
    const all = [];
    const walk = (list) => list.forEach((n) => {
      all.push(n);
      walk(n.children || []);
    });
    walk(nodes);
    const minRound = Math.min(...all.map((n) => n.from_round));
    const maxRound = Math.max(...all.map((n) => n.to_round));
    const levels = [...new Set(all.map((n) => n.level))].sort((a, b) => b - a);
    const width = 1000;
    const row = 34;
    const left = 70;
    const x = (r) => left + ((r - minRound) / Math.max(1, maxRound + 1 - minRound)) * (width - left - 10);
    const svg = s('svg', { viewBox: `0 0 ${width} ${levels.length * row + 30}`, role: 'img', id: 'timeline-chart',
      'aria-label': `plot tree: ${all.length} nodes over rounds ${minRound} to ${maxRound}` },
    levels.map((level, i) => s('text', { x: 4, y: i * row + 22, 'font-size': 13, fill: '#5b6472', text: `level ${level}` })),
    all.map((n) => {
      const y = levels.indexOf(n.level) * row + 6;
      return s('a', { href: href(['u', user, 'memory', n.id]) },
        s('rect', { x: x(n.from_round), y, width: Math.max(3, x(n.to_round + 1) - x(n.from_round) - 2), height: row - 10, rx: 4,
          fill: n.active ? '#e4ebf6' : '#f4e3e4', stroke: n.active ? '#2b4c7e' : '#a3262a', 'data-node': n.id },
        s('title', { text: `rounds ${n.from_round}–${n.to_round}: ${clip(n.text, 160)}` })));
    }),
    axis(x, minRound, maxRound, levels.length * row + 8));
    const tree = (list) => h('ul', {}, list.map((n) => h('li', {},
      h('details', { open: n.level >= 3 ? true : null },
        h('summary', {}, pill(`L${n.level} · rounds ${n.from_round}–${n.to_round}`, n.active ? '' : 'forgotten'), ' ',
          h('a', { href: href(['u', user, 'memory', n.id]), text: clip(n.text, 160) })),
        n.reason ? h('div', { class: 'small muted', text: n.reason }) : null,
        (n.children || []).length ? tree(n.children) : null))));
    return [h('div', { class: 'card' }, svg), h('div', { class: 'tree', id: 'timeline-tree' }, tree(nodes))];
  }

  function swatch(color) {
    const el = h('i', { 'aria-hidden': 'true' });
    el.style.background = color;
    return el;
  }

  function axis(x, from, to, y) {
    const ticks = 6;
    const step = Math.max(1, Math.ceil((to - from) / ticks));
    const marks = [];
    for (let r = from; r <= to; r += step) marks.push(r);
    return s('g', {}, marks.map((r) => [
      s('line', { x1: x(r), x2: x(r), y1: y - 4, y2: y, stroke: '#5b6472' }),
      s('text', { x: x(r), y: y + 14, 'font-size': 12, 'text-anchor': 'middle', fill: '#5b6472', text: `round ${r}` })]));
  }

  function chainsView(user, data) {
    if (!data || !data.chains.length) return h('p', { class: 'muted', id: 'view-empty', text: 'No memory chains yet (the M⁴ preset builds them).' });
    const order = [...new Map(data.chains.flatMap((c) => c.nodes).sort((a, b) => a.time.localeCompare(b.time)).map((n) => [n.id, n])).values()];
    const column = new Map(order.map((n, i) => [n.id, i]));
    const width = Math.max(600, 150 + order.length * 60);
    const row = 56;
    const x = (id) => 150 + column.get(id) * 60;
    const y = (i) => 30 + i * row;
    const rowsOf = new Map();
    data.chains.forEach((c, i) => c.nodes.forEach((n) => {
      if (!rowsOf.has(n.id)) rowsOf.set(n.id, []);
      rowsOf.get(n.id).push(i);
    }));
    const svg = s('svg', { viewBox: `0 0 ${width} ${data.chains.length * row + 20}`, width, role: 'img', id: 'chains-chart',
      'aria-label': `${data.chains.length} chains, ${order.length} nodes` },
    data.chains.map((c, i) => [
      s('text', { x: 4, y: y(i) + 5, 'font-size': 13, fill: '#1d2430', text: clip(c.category, 18) }),
      s('polyline', { points: c.nodes.map((n) => `${x(n.id)},${y(i)}`).join(' '), fill: 'none', stroke: '#8e5bd0', 'stroke-width': 2 })]),
    [...rowsOf].filter(([, rows]) => rows.length > 1).map(([id, rows]) =>
      s('line', { x1: x(id), x2: x(id), y1: y(Math.min(...rows)), y2: y(Math.max(...rows)), stroke: '#c77700', 'stroke-dasharray': '4 3', 'stroke-width': 2 })),
    data.chains.map((c, i) => c.nodes.map((n) => s('a', { href: href(['u', user, 'memory', n.id]) },
      s('circle', { cx: x(n.id), cy: y(i), r: n.categories.length > 1 ? 9 : 7, fill: n.categories.length > 1 ? '#c77700' : '#8e5bd0', 'data-node': n.id },
        s('title', { text: `${n.categories.join(', ')} · ${isoShort(n.time)}: ${clip(n.text, 160)}` }))))));
    return [
      h('div', { class: 'card' }, svg, h('div', { class: 'chart-legend' },
        h('span', {}, swatch('#8e5bd0'), 'a node (its chain\'s summary of a session)'),
        h('span', {}, swatch('#c77700'), 'a node shared by several chains, joined by dashes'))),
      data.chains.map((c) => h('section', { class: 'card' }, h('h2', { text: c.category }),
        h('ol', { class: 'turns' }, c.nodes.map((n) => h('li', {},
          h('a', { href: href(['u', user, 'memory', n.id]), text: n.text }),
          h('div', { class: 'small muted', text: `${isoShort(n.time)} · ${n.tokens} tokens${n.compressions ? ` · compressed ${n.compressions}×` : ''}${n.categories.length > 1 ? ` · shared with ${n.categories.filter((k) => k !== c.category).join(', ')}` : ''}` })))))),
      data.calibrations.length ? [h('h2', { text: 'Calibrations' }), table(['Superseded', 'By', 'Categories'],
        data.calibrations.map((cal) => h('tr', {},
          h('td', { class: 'text' }, h('a', { href: href(['u', user, 'memory', cal.stale]), text: clip(cal.stale_text, 160) })),
          h('td', { class: 'text' }, cal.superseded_by ? h('a', { href: href(['u', user, 'memory', cal.superseded_by]), text: 'the newer node' }) : '—'),
          h('td', { text: cal.categories.join(', ') }))))] : null,
    ];
  }

  // ---- forgetting and capacity ---------------------------------------------------------------

  async function forgettingPage(segs, query) {
    const user = segs[1];
    const agent = query.get('agent');
    const [retention, forgotten] = await Promise.all([
      api('GET', `${userPath(user)}/retention?points=300${agent ? `&agent=${enc(agent)}` : ''}`),
      api('GET', `${userPath(user)}/memories?state=forgotten&sort=newest&limit=100`),
    ]);
    const by = Object.entries(retention.forgotten_by || {}).sort((a, b) => b[1] - a[1]);
    const most = Math.max(1, ...by.map(([, n]) => n));
    return [
      h('h1', { text: 'Forgetting and capacity' }),
      h('div', { class: 'card' }, h('h2', { text: 'Memories kept over rounds' }), retentionChart(retention)),
      h('h2', { text: 'Forgotten, by cause' }),
      by.length ? h('div', { class: 'bars card', id: 'forgotten-by' }, by.map(([cause, n]) => {
        const fill = h('span', {});
        fill.style.width = `${(n / most) * 100}%`;
        return [h('span', { text: cause }), h('div', { class: 'bar adjust' }, fill), h('span', { class: 'value', 'data-cause': cause, text: n })];
      })) : h('p', { class: 'muted', text: 'Nothing has been forgotten.' }),
      h('h2', { text: `Forgotten memories (${forgotten.total})` }),
      forgotten.memories.length ? table(['Forgotten', 'Cause', 'Reason', 'Kind', 'Text'], forgotten.memories.map((m) => h('tr', { 'data-memory': m.id },
        h('td', { class: 'small', text: when(m.forgotten && m.forgotten.at) }),
        h('td', {}, pill(m.forgotten && m.forgotten.by === 'preset' ? m.forgotten.preset : (m.forgotten ? m.forgotten.by : '?'))),
        h('td', { class: 'small text', text: m.forgotten ? m.forgotten.reason : '' }),
        h('td', {}, pill(m.kind)),
        h('td', { class: 'text' }, h('a', { href: href(['u', user, 'memory', m.id]), text: clip(m.text, 160) })))), { id: 'forgotten-table' }) : null,
      forgotten.total > forgotten.memories.length
        ? h('p', {}, h('a', { href: href(['u', user, 'memories'], { state: 'forgotten', sort: 'newest' }), text: 'All forgotten memories →' })) : null,
    ];
  }

  function retentionChart(retention) {
    const series = retention.series || [];
    if (!series.length) return h('p', { class: 'muted', text: 'No memories yet.' });
    const width = 900;
    const height = 260;
    const pad = { left: 50, right: 36, top: 10, bottom: 34 };
    const first = series[0].round;
    const last = Math.max(first + 1, retention.last_round || 0, series[series.length - 1].round);
    const top = Math.max(1, ...series.map((p) => p.created));
    const x = (r) => pad.left + ((r - first) / (last - first)) * (width - pad.left - pad.right);
    const y = (n) => height - pad.bottom - (n / top) * (height - pad.top - pad.bottom);
    // Counts hold until the next change, so each series is drawn as steps.
    const steps = (pick) => {
      const points = [];
      series.forEach((p, i) => {
        if (i) points.push(`${x(p.round)},${y(pick(series[i - 1]))}`);
        points.push(`${x(p.round)},${y(pick(p))}`);
      });
      points.push(`${x(last)},${y(pick(series[series.length - 1]))}`);
      return points.join(' ');
    };
    const lines = [['created', '#8a94a3'], ['active', '#2e7d4f'], ['forgotten', '#a3262a']];
    const end = series[series.length - 1];
    return [
      s('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', id: 'retention-chart',
        'aria-label': `at round ${end.round}: ${end.active} active of ${end.created} created, ${end.forgotten} forgotten` },
      [0, 0.5, 1].map((f) => [
        s('line', { x1: pad.left, x2: width - pad.right, y1: y(top * f), y2: y(top * f), stroke: '#eef1f5' }),
        s('text', { x: pad.left - 6, y: y(top * f) + 4, 'font-size': 12, 'text-anchor': 'end', fill: '#5b6472', text: Math.round(top * f) })]),
      lines.map(([name, color]) => s('polyline', { points: steps((p) => p[name]), fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': name })),
      axis(x, first, last, height - pad.bottom + 8)),
      h('div', { class: 'chart-legend' }, lines.map(([name, color]) =>
        h('span', {}, swatch(color), `${name} (${end[name]} at round ${end.round})`))),
    ];
  }

  // ---- jobs ---------------------------------------------------------------------------------

  async function jobsPage(segs) {
    const user = segs[1];
    const jobs = await api('GET', `${userPath(user)}/jobs`);
    const retry = async (job) => {
      const ok = await confirmAction({ title: 'Retry this job?', body: `${job.kind} of preset ${job.preset}, tried ${job.attempts} time(s).`, ok: 'Retry now' });
      if (!ok) return;
      try {
        const r = await api('POST', `${userPath(user)}/jobs/${enc(job.id)}/retry`);
        wrote();
        const errors = r.errors.map((e) => e.message).join('; ');
        flash(r.failed ? 'error' : 'ok', r.failed ? `The job failed again: ${errors}` : `Done: ${r.memories_created} created, ${r.memories_updated} updated, ${r.memories_forgotten} forgotten.`);
        render();
      } catch (error) {
        flash('error', `Retry failed: ${error.message}`);
      }
    };
    return [
      h('h1', { text: 'Jobs' }),
      h('p', { class: 'muted', text: 'Derived work (summaries, persona updates…) that has not succeeded yet. Jobs that keep failing become stuck until retried.' }),
      jobs.length ? table(['State', 'Kind', 'Preset', { label: 'Scope', narrow: true }, 'Created', { label: 'Attempts', num: true }, 'Last error', ''],
        jobs.map((job) => h('tr', { 'data-job': job.id },
          h('td', {}, pill(job.state, job.state)), h('td', { text: job.kind }), h('td', { text: job.preset }),
          h('td', { class: 'small hide-narrow', text: `${job.agent} / ${job.session}` }),
          h('td', { class: 'small', text: when(job.created) }),
          h('td', { class: 'num', text: job.attempts ? `${job.attempts} (retried ${job.attempts - 1}×)` : '0' }),
          h('td', { class: 'small text', text: job.last_error || '' }),
          h('td', {}, job.state !== 'pending' ? h('button', { type: 'button', class: 'secondary', 'aria-label': `retry job ${job.id}`, onclick: () => retry(job), text: 'Retry…' }) : null))),
        { id: 'jobs-table' }) : h('p', { id: 'no-jobs', text: 'No pending or failed jobs.' }),
    ];
  }

  start();
})();
