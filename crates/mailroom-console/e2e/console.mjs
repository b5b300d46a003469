// The operator's console in a real browser (Debian's chromium driven by playwright-core):
// an agent's hold request appears live, the operator answers it in the page and the agent's
// inbox shows the answer; compose; a channel's timeline; search; a file reservation listed on
// the projects page and released there; and the XSS table, where no payload may run a script,
// open a dialog or make a request leave the page.
//
// Usage: node console.mjs MAILROOM_BIN [SCREENSHOT_DIR] [--docs DIR] [--latency N]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const bin = args[0];
if (!bin) throw new Error('usage: node console.mjs MAILROOM_BIN [SCREENSHOT_DIR] [--docs DIR] [--latency N]');
const shots = args[1] && !args[1].startsWith('--') ? args[1] : 'target/console-screenshots';
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const docs = opt('--docs');
const latencyRuns = Number(opt('--latency') || 0);
mkdirSync(shots, { recursive: true });

const root = mkdtempSync(join(tmpdir(), 'mailroom-console-e2e-'));
const home = join(root, 'home');
const env = { ...process.env, MAILROOM_HOME: home };
delete env.MAILROOM_AS;
delete env.MAILROOM_URL;

function mr(as, ...rest) {
  return execFileSync(bin, ['--as', as, ...rest], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
function mrJson(as, ...rest) { return JSON.parse(mr(as, '--json', ...rest)); }
function refused(as, ...rest) {
  try { mr(as, ...rest); } catch (e) { return e.status; }
  return 0;
}
function check(cond, what) {
  if (!cond) throw new Error('FAILED: ' + what);
  console.log('ok - ' + what);
}

// The room: two projects, roles, a run channel, some pending mail for HUMAN.
mr('HUMAN', 'projects', 'add', 'web');
mr('HUMAN', 'roster', 'add', 'alice', '--role', 'frontend', '--project', 'web');
mr('HUMAN', 'roster', 'add', 'bob', '--role', 'backend', '--project', 'web');
mr('HUMAN', 'roster', 'add', 'carol', '--role', 'reviewer (on leave)', '--project', 'web', '--inactive');
mr('dave@api', 'send', '--to', 'HUMAN', '--subject', 'Nightly report', '--message', 'All green.\nNothing to decide.');
const question = mrJson('bob@web', 'send', '--to', 'HUMAN', '--kind', 'QUESTION', '--subject', 'Which queue for the migration?',
  '--message', 'Option A: reuse the jobs table.\nOption B: a new queue.\nI lean to B.').id;
for (const [kind, text] of [['INFO', 'run 42 started: 12 shards'], ['INTERFACE_CHANGE', 'the /v2/orders endpoint now pages by cursor'],
  ['INFO', 'shard 7 failed twice; retrying'], ['HANDOVER', 'alice takes over shards 8-12']]) {
  mr('bob@web', 'channel', 'post', 'run-42', '--kind', kind, '--message', text);
}

const server = spawn(bin, ['serve', '--listen', '127.0.0.1:0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve, reject) => {
  const rl = createInterface({ input: server.stdout });
  rl.once('line', resolve);
  server.once('exit', (code) => reject(new Error('serve exited with ' + code)));
});
const base = new URL(url).origin;
console.log('console at ' + base);

const profile = join(root, 'chromium-profile');
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1100, height: 800 },
});
let failed = false;
const dialogs = [];
const offsite = [];
const cspReports = [];
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('request', (r) => { if (!r.url().startsWith(base + '/')) offsite.push(r.url()); });
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspReports.push(m.text()); });
  page.setDefaultTimeout(15000);

  // Admission, following the printed address from another site (as from a chat or a web
  // mail): the token becomes a cookie and leaves the address bar.
  await page.setContent(`<a id="printed" href="${url}">the console</a>`);
  await page.click('#printed');
  await page.waitForURL(base + '/');
  await page.waitForSelector('main h1');
  check((await page.locator('main h1').innerText()) === 'Decisions', 'a link from another site admits the browser');
  check(page.url() === base + '/', 'the token leaves the address bar: ' + page.url());
  await page.waitForSelector('#live.on');
  check(await page.locator('li.decision').count() === 1, 'the decision queue holds the open question');
  check((await page.locator('nav a[href="/inbox"] .count').innerText()) === '2', 'the inbox count shows 2 pending');

  // An agent's hold request appears live, without a reload.
  await page.evaluate(() => { window.__sameDocument = true; });
  const hold = mrJson('alice@web', 'send', '--to', 'HUMAN', '--kind', 'HOLD_REQUEST', '--priority', 'H',
    '--subject', 'Deploy the checkout fix to production?', '--message',
    'Tests pass on staging. The change touches payment retries.\nShall I deploy now, or wait for the freeze to end?').id;
  await page.waitForSelector(`li.decision[data-id="${hold}"]`);
  check(await page.evaluate(() => window.__sameDocument === true), 'the hold request appeared without a reload');
  check((await page.locator('li.decision').first().getAttribute('data-id')) === hold, 'hold requests come first');
  await page.screenshot({ path: join(shots, 'decisions.png'), fullPage: true });

  // The operator answers in place with the keyboard: select, r, type, Ctrl+Enter.
  await page.locator(`li.decision[data-id="${hold}"] .meta`).click();
  await page.keyboard.press('r');
  check(await page.evaluate(() => document.activeElement.tagName === 'TEXTAREA'), 'r focuses the answer');
  await page.keyboard.type('Yes: deploy now, and watch the retry dashboard for an hour.');
  const [replied] = await Promise.all([page.waitForResponse(base + '/reply'), page.waitForNavigation(),
    page.keyboard.press('Control+Enter')]);
  check(replied.status() === 303, 'the reply was accepted: ' + replied.status() + ' ' + (replied.status() === 303 ? '' : await replied.text()));
  check(await page.locator(`li.decision[data-id="${hold}"]`).count() === 0, 'the answered hold request left the queue');
  const aliceInbox = mrJson('alice@web', 'inbox');
  const answer = aliceInbox.messages.find((m) => m.reply_to === hold);
  check(answer && answer.from === 'HUMAN' && answer.body.startsWith('Yes: deploy now'), "the agent's inbox shows the answer");
  const humanCopy = mrJson('HUMAN', 'read', hold);
  check(humanCopy.state === 'done' || humanCopy.message?.state === 'done' || JSON.stringify(humanCopy).includes('"done"'),
    "HUMAN's copy of the hold request is closed");

  // d marks the selected decision done.
  await page.locator(`li.decision[data-id="${question}"] .meta`).click();
  const [doneAnswer] = await Promise.all([page.waitForResponse(base + '/done'), page.waitForNavigation(),
    page.keyboard.press('d')]);
  check(doneAnswer.status() === 303, 'done was accepted');
  check(await page.locator(`li.decision[data-id="${question}"]`).count() === 0, 'd marked the question done');

  // Compose: to one member, then to a project's active members.
  await page.goto(base + '/compose');
  await page.fill('input[name=to]', 'bob@web');
  await page.fill('input[name=subject]', 'Freeze ends Friday');
  await page.fill('textarea[name=body]', 'Hold merges to main until Friday 18:00.');
  await Promise.all([page.waitForURL(/\/compose\?sent=/), page.click('form.compose button[type=submit]')]);
  check(await page.locator('p.notice').count() === 1, 'compose confirms the send');
  const bob = mrJson('bob@web', 'inbox').messages.find((m) => m.subject === 'Freeze ends Friday');
  check(bob && bob.from === 'HUMAN', 'the member received the message');
  await page.check('input[name=mode][value=members]');
  await page.selectOption('select[name=project]', 'web');
  await page.fill('input[name=subject]', 'Retro at 16:00');
  await page.fill('textarea[name=body]', 'Bring one thing that slowed you down.');
  await page.click('form.compose button[type=submit]');
  await page.waitForURL(/\/compose\?sent=/);
  check(mrJson('alice@web', 'inbox').messages.some((m) => m.subject === 'Retro at 16:00'), "a project's members received it");
  await page.screenshot({ path: join(shots, 'compose.png'), fullPage: true });

  // A channel's timeline, and its entries by kind.
  await page.goto(base + '/channels');
  await page.click('a[href="/channel/web/run-42"]');
  check(await page.locator('ol.timeline li.entry').count() === 4, "the channel's timeline shows its four entries");
  await page.click('nav.kinds a[href$="?kind=HANDOVER"]');
  check(await page.locator('ol.timeline li.entry').count() === 1, 'the kind filter keeps the handover');
  await page.goto(base + '/channel/web/run-42');
  await page.screenshot({ path: join(shots, 'channel.png'), fullPage: true });

  // Search.
  await page.goto(base + '/search');
  await page.fill('input[name=q]', 'shard');
  await page.press('input[name=q]', 'Enter');
  await page.waitForURL(/q=shard/);
  check(await page.locator('ol.timeline li.entry').count() === 3, 'search finds the three entries about shards');
  await page.screenshot({ path: join(shots, 'search.png'), fullPage: true });

  // A file reservation: listed on the projects page, released there by the operator, gone.
  mr('bob@web', 'reserve', 'src/api/**', '--ttl', '1h', '--reason', 'moving the users endpoint');
  const lease = mrJson('bob@web', 'reservations').reservations.find((l) => l.holder === 'bob@web').id;
  check(refused('alice@web', 'check', 'src/api/users.rs') === 4, "another agent's check meets bob's lease");
  await page.goto(base + '/projects');
  check((await page.locator('tr.inactive').count()) === 1, 'the projects page shows the inactive member');
  const leaseRow = page.locator(`tr[data-lease="${lease}"]`);
  check(await leaseRow.count() === 1, 'the projects page lists the lease');
  const cells = await leaseRow.locator('td').allInnerTexts();
  check(cells[0] === 'bob@web' && cells[1] === 'src/api/**' && cells[2] === 'exclusive' &&
    cells[3] === 'moving the users endpoint' && / UTC \(in \d+[smhd]\)$/.test(cells[4]),
    "the lease's holder, pattern, kind, reason and expiry: " + JSON.stringify(cells));
  await page.screenshot({ path: join(shots, 'projects.png'), fullPage: true });
  const [released] = await Promise.all([page.waitForResponse(base + '/release'), page.waitForNavigation(),
    leaseRow.getByRole('button', { name: 'Release src/api/** held by bob@web' }).click()]);
  check(released.status() === 303, 'the release was accepted: ' + released.status());
  check(page.url() === base + '/projects', 'the operator is back on the projects page: ' + page.url());
  check(await page.locator('tr[data-lease]').count() === 0, 'the released lease is gone from the page');
  check(mrJson('alice@web', 'reservations').reservations.length === 0, 'the released lease is gone from the store');
  check(refused('alice@web', 'check', 'src/api/users.rs') === 0, 'another agent may edit the files now');

  // The XSS table: every payload in every free-text field an agent controls.
  const payloads = [
    ['script tag', '<script>window.__pwned="script";alert(1)</script>'],
    ['event handler', '<img src=x onerror="window.__pwned=\'img\';alert(2)">'],
    ['javascript: URL', '<a href="javascript:window.__pwned=\'js\'">click me</a>'],
    ['SVG payload', '<svg onload="window.__pwned=\'svg\'"><script>window.__pwned="svg2"</script></svg>'],
    ['HTML entities', '&lt;script&gt;window.__pwned="entity"&lt;/script&gt; &#60;img src=x onerror=alert(3)&#62;'],
    ['Markdown link trick', '[docs](javascript:window.__pwned="md") ![x](http://127.0.0.2:9/pixel.png) <javascript:alert(4)>'],
    ['remote image and CSS', '<img src="http://127.0.0.2:9/leak.png"><link rel=stylesheet href="http://127.0.0.2:9/x.css"><style>body{background:url(http://127.0.0.2:9/bg)}</style>'],
    ['attribute breakout', '"><script>window.__pwned="attr"</script><p x="'],
    ['iframe and meta refresh', '<iframe src="javascript:parent.__pwned=\'frame\'"></iframe><meta http-equiv="refresh" content="0;url=javascript:alert(5)">'],
  ];
  const ids = [];
  for (const [name, p] of payloads) {
    ids.push(mrJson('alice@web', 'send', '--to', 'HUMAN', '--kind', 'QUESTION', '--subject', `${name}: ${p}`.slice(0, 190), '--message', p).id);
    mr('alice@web', 'channel', 'post', 'run-43', '--message', p);
  }
  mr('HUMAN', 'roster', 'add', 'eve', '--role', payloads[0][1], '--project', 'web');
  // Names (senders, handles, projects, channels) are checked before anything is stored: a
  // payload there is refused and never reaches the page.
  check(refused('<script>x</script>@web', 'send', '--to', 'HUMAN', '--message', 'x') === 2, 'a sender named with markup is refused');
  check(refused('alice@web', 'channel', 'post', '<svg onload=x>', '--message', 'x') === 2, 'a channel named with markup is refused');
  check(refused('alice@<img>', 'send', '--to', 'HUMAN', '--message', 'x') === 2, 'a project named with markup is refused');
  for (const path of ['/', '/inbox', `/m/${ids[0]}`, `/thread/${ids[1]}`, '/channels', '/channel/web/run-43', '/projects',
    '/search?q=pwned']) {
    await page.goto(base + path);
    await page.waitForTimeout(50);
  }
  await page.goto(base + '/inbox');
  for (const [i, [name, p]] of payloads.entries()) {
    const text = await page.locator(`li[data-id="${ids[i]}"] .body`).innerText();
    check(text === p, `${name}: the body shows as the literal text written`);
    const subject = await page.locator(`li[data-id="${ids[i]}"] .subject`).innerText();
    check(subject === `${name}: ${p}`.slice(0, 190), `${name}: the subject shows as the literal text written`);
  }
  await page.goto(base + '/channel/web/run-43');
  check((await page.locator('li.entry .body').allInnerTexts()).join('\n') === payloads.map(([, p]) => p).join('\n'),
    "every payload shows as literal text in the channel's timeline");
  await page.goto(base + '/projects');
  check((await page.locator('tr', { hasText: 'eve' }).locator('td').nth(1).innerText()) === payloads[0][1],
    "a role carrying a script tag shows as literal text on the projects page");
  await page.goto(base + '/inbox');
  await page.screenshot({ path: join(shots, 'xss.png'), fullPage: true });
  const pwned = await page.evaluate(() => window.__pwned);
  check(pwned === undefined, 'no payload ran a script (window.__pwned is ' + pwned + ')');
  check(dialogs.length === 0, 'no payload opened a dialog: ' + JSON.stringify(dialogs));
  check(offsite.length === 0, 'no request left the page: ' + JSON.stringify(offsite));
  check(cspReports.length === 0, 'escaping alone kept every payload inert (no CSP report): ' + JSON.stringify(cspReports));

  // Looks: a phone in dark mode.
  mr('alice@web', 'send', '--to', 'HUMAN', '--kind', 'HOLD_REQUEST', '--subject', 'Drop the legacy cache table?',
    '--message', 'Nothing has read it for 30 days. Dropping frees 40 GB.');
  const phone = await context.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.emulateMedia({ colorScheme: 'dark' });
  await phone.goto(base + '/');
  const width = await phone.evaluate(() => document.documentElement.scrollWidth);
  check(width <= 390, 'the decision queue fits a phone without sideways scrolling (' + width + 'px)');
  await phone.screenshot({ path: join(shots, 'phone-dark.png') });
  await phone.close();

  if (latencyRuns > 0) {
    await page.goto(base + '/');
    await page.waitForSelector('#live.on');
    const fromStart = [];
    const fromExit = [];
    for (let i = 0; i < latencyRuns; i++) {
      const before = await page.evaluate(() => document.body.dataset.lastEvent || '');
      const start = Date.now();
      const id = mrJson('bob@web', 'send', '--to', 'HUMAN', '--message', 'latency ' + i).id;
      const exit = Date.now();
      await page.waitForFunction((id) => (document.body.dataset.lastEvent || '').startsWith(id), id);
      const at = Number(await page.evaluate(() => document.body.dataset.lastEventAt));
      fromStart.push(at - start);
      fromExit.push(at - exit);
      void before;
    }
    const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
    console.log(`latency: ${latencyRuns} sends; send start -> event in page median ${median(fromStart)} ms (max ${Math.max(...fromStart)}); send exit -> event median ${median(fromExit)} ms`);
  }

  if (docs) {
    copyFileSync(join(shots, 'decisions.png'), join(docs, 'console-decisions.png'));
    copyFileSync(join(shots, 'phone-dark.png'), join(docs, 'console-phone-dark.png'));
  }
} catch (e) {
  failed = true;
  console.error(e);
} finally {
  await context.close();
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(root, { recursive: true, force: true });
}
console.log(failed ? 'console browser test FAILED' : 'console browser test passed; screenshots in ' + shots);
process.exit(failed ? 1 : 0);
