/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against the
 * real server and a scripted model: approving a write card writes the file; declining with
 * feedback cancels the call and the model's next request carries the feedback; a reload and a
 * server restart (SIGKILL, then a new process on the same port and store) while a card waits
 * bring the card back, answerable; hostile model text and file content render as text.
 *
 * With CONSOLE_SCREENSHOT=<file.png> the run saves the console with a pending card there (the
 * README's picture: test/browser/console.png).
 */
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import type { ModelChunk, ModelClient, ModelRequest } from '../../src/agent/model/model-client.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { browserSkipReason, launchBrowser, watchedPage } from '../support/browser.js';
import { freshDatabase, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { sharedStore, startServer, tempDir } from '../support/server.js';
import type { WriteBatch } from '../../src/agent/task-store.js';
import type { MemoryTaskStore } from '../../src/store/memory-store.js';
import { StreamResponse } from '@a2a-js/sdk';

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
const say = (...texts: string[]) => ({ chunks: texts.map((text) => [{ text }]) });
const write = (file: string, content: string) => ({ chunks: [[call('write_file', { file_path: file, content })]] });

const API_KEY = 'console-key-0123456789abcdef';

const HOSTILE_TEXT = 'Look: <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script> done';
const HOSTILE_FILE = '<script>window.__pwned=3</script>\n<img src=x onerror="window.__pwned=4">\n';

const SCRIPT: ModelScript = {
  model: 'scripted-console',
  scripts: [
    {
      when: '^approve me',
      steps: [
        {
          chunks: [
            [{ text: '**Planning** where the note goes', thought: true }],
            [{ text: 'I will write **approved.txt** for you.' }],
            [call('write_file', { file_path: 'approved.txt', content: 'approved\n' })],
          ],
        },
        say('Wrote approved.txt.'),
      ],
    },
    { when: '^deny me', steps: [write('denied.txt', 'no\n'), say('Understood, I will not write it.')] },
    { when: '^modify me', steps: [write('modify.txt', 'proposed\n'), say('Wrote your version.')] },
    { when: '^survive reload', steps: [write('reload.txt', 'reload\n'), say('Wrote reload.txt.')] },
    { when: '^survive restart', steps: [write('restart.txt', 'restart\n'), say('Wrote restart.txt.')] },
    {
      // One call that runs without asking, one that waits: the cards commit first, the pause after the read.
      when: '^slow pause',
      steps: [
        { chunks: [[call('read_file', { file_path: 'slow-in.txt' }), call('write_file', { file_path: 'slow.txt', content: 'slow\n' })]] },
        say('Wrote slow.txt.'),
      ],
    },
    { when: '^undo me', steps: [write('undo.txt', 'changed\n'), say('Wrote undo.txt.')] },
    {
      when: '^colours',
      steps: [{ chunks: [[call('run_shell_command', { command: "printf '\\033[31mred\\033[0m <b>plain</b>\\n'" })]] }, say('Printed.')],
    },
    {
      when: '^hostile',
      steps: [{ chunks: [[{ text: HOSTILE_TEXT }], [call('write_file', { file_path: 'page.html', content: HOSTILE_FILE })]] }],
    },
    { steps: [{ echo: true }] },
  ],
};

/** The scripted model, keeping every request it was sent (what the model "read"). */
class RecordingModel implements ModelClient {
  readonly requests: ModelRequest[] = [];
  readonly #inner = new ScriptedModelClient(SCRIPT);
  readonly model = this.#inner.model;
  generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    this.requests.push(structuredClone(request));
    return this.#inner.generate(request, signal);
  }
}

const WAIT = { timeout: 20_000 };

/** The shared in-memory store, but every commit that logs a pause (input-required) waits `ms` first. */
async function pauseDelayingStore(ms: number): Promise<ReturnType<MemoryTaskStore['connect']>> {
  const store = (await sharedStore()).connect();
  const pauses = (batch: WriteBatch) =>
    batch.events.some((e) => JSON.stringify(StreamResponse.toJSON(e.response)).includes('TASK_STATE_INPUT_REQUIRED'));
  const held =
    <A extends unknown[], R>(commit: (batch: WriteBatch, ...rest: A) => Promise<R>) =>
    async (batch: WriteBatch, ...rest: A): Promise<R> => {
      if (pauses(batch)) await new Promise((resolve) => setTimeout(resolve, ms));
      return commit(batch, ...rest);
    };
  return Object.assign(Object.create(store) as typeof store, {
    commit: held(store.commit.bind(store)),
    commitWhileAwaiting: held(store.commitWhileAwaiting.bind(store)),
  });
}
const pendingCard = 'section.card[data-status="PENDING"]';

/** Opens the console, picks the workspace and sends the prompt with Enter; resolves once a card waits. */
async function startTask(page: Page, url: string, workspace: string | undefined, prompt: string): Promise<void> {
  await page.goto(url);
  if (workspace !== undefined) await page.fill('#workspace', workspace);
  await page.fill('#prompt', prompt);
  await page.press('#prompt', 'Enter');
  await page.waitForSelector(`${pendingCard} button[data-option="proceed_once"]`, WAIT);
}

const skip = browserSkipReason();

t.test('the web console in Chromium', { skip: skip ?? false }, async (t) => {
  const browser = await launchBrowser(t);
  const model = new RecordingModel();
  const server = await startServer(t, { model });

  t.test('a write card appears; Approve runs it and the file is written', async (t) => {
    const { page, trouble } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'approve me');
    t.match(await page.textContent(pendingCard), /write_file/);
    t.match(await page.textContent(`${pendingCard} .diff`), /approved/, 'the proposal as a diff');
    t.ok(await page.isVisible('details.thought'), 'the thought, collapsed');
    const shot = process.env.CONSOLE_SCREENSHOT;
    if (shot) await page.screenshot({ path: shot });
    await page.click(`${pendingCard} button[data-option="proceed_once"]`);
    await page.waitForSelector('section.card[data-status="SUCCEEDED"]', WAIT);
    await page.waitForSelector('text=Wrote approved.txt.', WAIT);
    t.match(await page.textContent('section.card .history'), /PENDING → EXECUTING → SUCCEEDED/);
    t.equal(readFileSync(path.join(server.workspace, 'approved.txt'), 'utf8'), 'approved\n');
    t.same(trouble, { errors: [], dialogs: [] });
    await page.close();
  });

  t.test('Deny with feedback: CANCELLED, and the model reads the feedback', async (t) => {
    const { page } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'deny me');
    await page.fill(`${pendingCard} input.feedback`, 'put it in notes.md instead');
    await page.click(`${pendingCard} button[data-option="cancel"]`);
    await page.waitForSelector('section.card[data-status="CANCELLED"]', WAIT);
    await page.waitForSelector('text=Understood, I will not write it.', WAIT);
    t.notOk(existsSync(path.join(server.workspace, 'denied.txt')), 'nothing written');
    const next = model.requests.at(-1);
    t.match(JSON.stringify(next?.contents), /put it in notes\.md instead/, "the model's next request carries the feedback");
    await page.close();
  });

  t.test('a card that is PENDING before its task pauses offers its options only with the pause', async (t) => {
    // A turn whose cards all wait commits them with its pause; this one first runs a read, so its
    // waiting card is committed before the pause, whose commit is held back 1.5 s here.
    const slow = await startServer(t, { script: SCRIPT, app: { store: await pauseDelayingStore(1500) } });
    writeFileSync(path.join(slow.workspace, 'slow-in.txt'), 'in\n');
    const { page } = await watchedPage(browser);
    await page.goto(slow.url);
    await page.fill('#workspace', slow.workspace);
    await page.fill('#prompt', 'slow pause');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector(pendingCard, WAIT);
    t.match(await page.getAttribute('.task-head .grow', 'data-state'), /^(working|submitted)$/, 'the task is still working');
    t.equal(await page.locator(`${pendingCard} button`).count(), 0, 'no option to click yet: the server would refuse it');
    t.match(await page.textContent(pendingCard), /You can answer once the agent has finished its turn/);
    // The write's own card: the read before it is a SUCCEEDED card already.
    const id = await page.getAttribute(pendingCard, 'data-card');
    await page.click(`${pendingCard} button[data-option="proceed_once"]`, WAIT);
    await page.waitForSelector(`section.card[data-card="${id}"][data-status="SUCCEEDED"]`, WAIT);
    t.equal(readFileSync(path.join(slow.workspace, 'slow.txt'), 'utf8'), 'slow\n');
    await page.close();
  });

  t.test('a reload while a card waits brings it back, and the shortcut approves it', async (t) => {
    const { page } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'survive reload');
    await page.reload();
    await page.waitForSelector(pendingCard, WAIT);
    t.match(await page.textContent('.transcript'), /survive reload/, 'the transcript is back');
    await page.focus(pendingCard);
    await page.keyboard.press('a');
    await page.waitForSelector('section.card[data-status="SUCCEEDED"]', WAIT);
    await page.waitForSelector('text=Wrote reload.txt.', WAIT);
    t.equal(readFileSync(path.join(server.workspace, 'reload.txt'), 'utf8'), 'reload\n');
    t.match(await page.textContent('.task-list'), /survive reload/, 'the task is in the sidebar');
    await page.close();
  });

  t.test('Modify opens an editor with the proposal; the edited version is written', async (t) => {
    const { page } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'modify me');
    await page.click(`${pendingCard} button[data-option="modify_with_editor"]`);
    t.equal(await page.inputValue(`${pendingCard} textarea.editor`), 'proposed\n', 'the editor holds the proposed content');
    await page.fill(`${pendingCard} textarea.editor`, 'mine instead\n');
    await page.click(`${pendingCard} button:has-text("Write my version")`);
    await page.waitForSelector('text=Wrote your version.', WAIT);
    t.equal(readFileSync(path.join(server.workspace, 'modify.txt'), 'utf8'), 'mine instead\n');
    await page.close();
  });

  t.test('with AUTH_CONFIG the console asks for a key, keeps it for the tab, and works with it', async (t) => {
    const dir = tempDir('console-auth-');
    const file = path.join(dir, 'auth.json');
    writeFileSync(
      file,
      JSON.stringify({ api_keys: [{ key: API_KEY, principal: 'ada', roles: ['approver'] }], approver_roles: ['approver'] }),
    );
    const guarded = await startServer(t, { model, env: { AUTH_CONFIG: file } });
    const { page } = await watchedPage(browser);
    await page.goto(guarded.url);
    await page.waitForSelector('form.login', WAIT);
    await page.fill('#credential', API_KEY);
    await page.click('form.login button[type="submit"]');
    await page.fill('#workspace', ''); // the server's WORKSPACE_DIR: with authentication, workspaces stay under it
    await page.fill('#prompt', 'approve me');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector(`${pendingCard} button[data-option="proceed_once"]`, WAIT);
    await page.reload();
    await page.waitForSelector(pendingCard, WAIT);
    t.equal(await page.locator('form.login').count(), 0, 'the key is remembered for the tab');
    await page.click(`${pendingCard} button[data-option="proceed_once"]`);
    await page.waitForSelector('section.card[data-status="SUCCEEDED"]', WAIT);
    t.equal(readFileSync(path.join(guarded.workspace, 'approved.txt'), 'utf8'), 'approved\n');
    await page.close();
  });

  t.test('shell output: ANSI colours as classes, markup as text', async (t) => {
    const { page, trouble } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'colours');
    t.match(await page.textContent(`${pendingCard} .command`), /printf/, 'the command to approve');
    await page.click(`${pendingCard} button[data-option="proceed_once"]`);
    await page.waitForSelector('section.card[data-status="SUCCEEDED"] .terminal', WAIT);
    t.equal(await page.textContent('.terminal .ansi-red-fg'), 'red', 'red text in a red span');
    t.match(await page.textContent('.terminal'), /red <b>plain<\/b>/, 'the markup it printed is text');
    t.equal(await page.locator('.terminal b').count(), 0, 'no element from the output');
    t.same(trouble, { errors: [], dialogs: [] });
    await page.close();
  });

  t.test('model text and file content with HTML render as text', async (t) => {
    const { page, trouble } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'hostile');
    await page.waitForSelector('.msg.agent', WAIT);
    t.equal((await page.textContent('.msg.agent'))?.trim(), HOSTILE_TEXT, 'the answer shows its markup as text');
    const diffText = await page.textContent(`${pendingCard} .diff`);
    t.match(diffText, '<script>window.__pwned=3</script>', 'the diff shows <script> as text');
    // Runs in the page (a string: the test's own types have no DOM).
    const created = await page.evaluate(`({
      elements: document.querySelectorAll('.transcript img, .transcript script, .transcript iframe, .transcript [onerror]').length,
      pwned: window.__pwned === undefined ? 'no' : String(window.__pwned),
    })`);
    t.same(created, { elements: 0, pwned: 'no' }, 'no element was created and nothing ran');
    t.same(trouble, { errors: [], dialogs: [] }, 'no error, no dialog');
    await page.close();
  });
});

t.test(
  'Undo on a succeeded edit (CHECKPOINTING): a restore with its own card and diff, approved like any edit',
  { skip: skip ?? false },
  async (t) => {
    const browser = await launchBrowser(t);
    const server = await startServer(t, { model: new RecordingModel(), env: { CHECKPOINTING: 'true' } });
    const file = path.join(server.workspace, 'undo.txt');
    writeFileSync(file, 'original\n');
    const { page, trouble } = await watchedPage(browser);
    await startTask(page, server.url, server.workspace, 'undo me');
    t.equal(await page.locator('button[data-undo]').count(), 0, 'no Undo while the card waits');
    await page.click(`${pendingCard} button[data-option="proceed_once"]`);
    const undo = 'section.card[data-status="SUCCEEDED"] button[data-undo]';
    await page.waitForSelector(undo, WAIT);
    t.equal(readFileSync(file, 'utf8'), 'changed\n');
    t.match(await page.getAttribute(undo, 'data-undo'), /-undo\.txt-write_file$/, 'Undo names the checkpoint');
    await page.click(undo);
    await page.waitForSelector(`${pendingCard} button[data-option="proceed_once"]`, WAIT);
    t.match(await page.textContent(pendingCard), /restore_file/, 'the restore shows its own card');
    t.match(await page.textContent(`${pendingCard} .diff`), /original/, 'with the diff it will apply');
    t.equal(readFileSync(file, 'utf8'), 'changed\n', 'nothing restored before the answer');
    await page.click(`${pendingCard} button[data-option="proceed_once"]`);
    await page.waitForSelector('section.card[data-status="SUCCEEDED"] button[data-undo*="restore_file"]', WAIT);
    t.equal(readFileSync(file, 'utf8'), 'original\n', 'restored; and the restore can be undone in turn');
    t.same(trouble, { errors: [], dialogs: [] });
    await page.close();
  },
);

t.test('a server restart while a card waits: the console reconnects and the card can be approved', { skip: skip ?? false }, async (t) => {
  const browser = await launchBrowser(t);
  const db = await freshDatabase(t);
  const env: Record<string, string> = db ? { DATABASE_URL: db.url } : { DATA_DIR: path.join(tempDir('console-data-'), 'pglite') };
  const workspace = tempDir();
  const first: ServerProcess = await spawnServer(t, { env, workspace, script: SCRIPT, readyTimeoutMs: 60_000 });
  const { page } = await watchedPage(browser);
  await startTask(page, first.url, undefined, 'survive restart');
  await first.kill('SIGKILL');
  await page.waitForSelector('.banner.reconnecting', WAIT);
  t.pass('the console shows it is reconnecting');
  // The server's (not the stream's) absence is what disables answering: wait for the probe to see it.
  await page.waitForSelector(`${pendingCard} button[data-option="proceed_once"]:disabled`, WAIT);
  t.match(await page.textContent(pendingCard), /The server does not answer/, 'the card says why it cannot be answered now');
  await page.fill('#prompt', 'a prompt while the server is away');
  t.ok(await page.isDisabled('.composer button.primary'), 'nor can a prompt be sent');
  t.ok(await page.isDisabled('.task-head button'), 'nor the task cancelled');
  await page.fill('#prompt', '');
  await spawnServer(t, { env, workspace, script: SCRIPT, port: first.port, readyTimeoutMs: 60_000 });
  await page.waitForSelector('.banner.reconnecting', { state: 'detached', ...WAIT });
  await page.click(`${pendingCard} button[data-option="proceed_once"]`, WAIT);
  await page.waitForSelector('section.card[data-status="SUCCEEDED"]', WAIT);
  t.equal(readFileSync(path.join(workspace, 'restart.txt'), 'utf8'), 'restart\n');
});
