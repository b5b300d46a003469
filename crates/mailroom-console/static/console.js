// mailroom console: live refresh and keys. No inline script anywhere: the page's CSP allows
// only this file. Agent text is never inserted as HTML here: fresh pages come from the server,
// already escaped, and are parsed as documents.
'use strict';
(function () {
  const body = document.body;
  const live = document.getElementById('live');

  function items() { return Array.from(document.querySelectorAll('main .item')); }
  function selected() { return document.querySelector('main .item[aria-selected="true"]'); }
  function select(el) {
    const old = selected();
    if (old) old.removeAttribute('aria-selected');
    if (!el) return;
    el.setAttribute('aria-selected', 'true');
    el.scrollIntoView({ block: 'nearest' });
  }
  function move(step) {
    const all = items();
    if (!all.length) return;
    const i = all.indexOf(selected());
    select(all[Math.max(0, Math.min(all.length - 1, i < 0 ? 0 : i + step))]);
  }

  // Replace main and the counts with a fresh copy of this page, keeping any half-written answer
  // and the selection.
  let pending = false;
  async function refresh() {
    if (pending) return;
    pending = true;
    try {
      const r = await fetch(location.href, { credentials: 'same-origin' });
      if (!r.ok) return;
      const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
      const fresh = doc.querySelector('main');
      const cur = document.querySelector('main');
      if (!fresh || !cur) return;
      const sel = selected();
      const selId = sel ? sel.dataset.id : null;
      for (const old of cur.querySelectorAll('[data-id]')) {
        const ta = old.querySelector('textarea');
        if (ta && (ta.value || document.activeElement === ta)) {
          const twin = fresh.querySelector('[data-id="' + CSS.escape(old.dataset.id) + '"]');
          if (twin) twin.replaceWith(old);
        }
      }
      cur.replaceWith(fresh);
      const nav = doc.querySelector('header.top nav');
      const curNav = document.querySelector('header.top nav');
      if (nav && curNav) curNav.replaceWith(nav);
      const again = selId && fresh.querySelector('.item[data-id="' + CSS.escape(selId) + '"]');
      if (again) select(again);
      else if (!selected()) select(items()[0]);
      body.dataset.refreshed = String(Number(body.dataset.refreshed || '0') + 1);
    } finally {
      pending = false;
    }
  }

  function connect() {
    const es = new EventSource('/events?after=' + encodeURIComponent(body.dataset.after || ''));
    es.onopen = function () { if (live) live.classList.add('on'); };
    es.onerror = function () { if (live) live.classList.remove('on'); };
    es.addEventListener('mail', function (e) {
      body.dataset.lastEvent = e.data;
      body.dataset.lastEventAt = String(Date.now());
      if (body.dataset.live === '1') refresh();
      else {
        const n = document.querySelector('header.top nav a[href="/inbox"]');
        if (n) n.classList.add('fresh');
      }
    });
  }
  connect();

  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT');
    if (typing) {
      if (e.key === 'Escape') t.blur();
      return;
    }
    const cur = selected();
    switch (e.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'r': {
        const ta = cur && cur.querySelector('form.reply textarea');
        if (ta) { ta.focus(); e.preventDefault(); }
        break;
      }
      case 'd': {
        const f = cur && cur.querySelector('form.done');
        if (f) f.requestSubmit();
        break;
      }
      case 'o': {
        const a = cur && cur.querySelector('.subject a');
        if (a) a.click();
        break;
      }
      case '/': location.href = '/search'; e.preventDefault(); break;
      default: return;
    }
  });

  // Ctrl+Enter in an answer sends it.
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && e.target.tagName === 'TEXTAREA') {
      const f = e.target.form;
      if (f) f.requestSubmit();
    }
  });

  document.addEventListener('click', function (e) {
    const item = e.target.closest && e.target.closest('main .item');
    if (item) select(item);
  });
})();
