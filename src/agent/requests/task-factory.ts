/**
 * Where tasks come from: a context is opened (the caller's own, or created with the requested
 * settings, its workspace checked and claimed) and a task created in it, one start at a time per
 * context, in a context no other task holds (one conversation, one model turn at a time). Used by
 * the message router, the slash commands and the legacy REST routes.
 */
import { randomUUID } from 'node:crypto';
import type { Message } from '@a2a-js/sdk';
import { stateName } from '../../protocol/a2a.js';
import { createdSnapshot, idleUntilAsked, startWorking } from '../runtime/task-lifecycle.js';
import type { Caller } from '../../protocol/caller.js';
import { forbidden, invalidParams, unsupported } from '../../protocol/errors.js';
import { BUSY_STATES } from '../../protocol/task-states.js';
import { overlaps } from '../policy/access.js';
import type { Access } from '../policy/access.js';
import { checkSameWorkspace, mergeSettings, SETTINGS_AT } from '../policy/settings.js';
import type { RequestedSettings } from '../policy/settings.js';
import type { ContextState, LiveTask, PauseAuthority } from '../runtime/live-task.js';
import type { TaskCache } from '../runtime/task-cache.js';
import type { Toolbox } from '../runtime/toolbox.js';
import type { ModelContent } from '../model/model-client.js';
import type { TaskStore } from '../task-store.js';
import type { WireDialect } from '../wire/wire-encoder.js';

export interface TaskFactoryOptions {
  store: TaskStore;
  cache: TaskCache;
  toolbox: Toolbox;
  access: Access;
  /**
   * Checks a client-given MCP server URL before anything connects to it (the SSRF guard);
   * resolves to a message naming the problem, or undefined.
   */
  checkMcpUrl?: (url: string, at: string) => Promise<string | undefined>;
  /** Workspace of a context whose first message names none. */
  defaultWorkspace: string;
  instanceId: string;
  leaseMs: number;
}

export class TaskFactory {
  /** Per context: the start in progress (see exclusive). */
  private readonly starting = new Map<string, Promise<void>>();

  constructor(private readonly opts: TaskFactoryOptions) {}

  /**
   * Runs `work` alone among this process's starts in the context: a check that the context is
   * free and the start it allows (committed before the next check runs) cannot interleave with
   * another's. (Two processes starting tasks in one context at the same instant are not kept
   * apart: that needs a claim in the store.)
   */
  async exclusive<T>(contextId: string, work: () => Promise<T>): Promise<T> {
    const before = this.starting.get(contextId) ?? Promise.resolve();
    const mine = before.then(work, work);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.starting.set(contextId, settled);
    try {
      return await mine;
    } finally {
      if (this.starting.get(contextId) === settled) this.starting.delete(contextId);
    }
  }

  /**
   * One conversation, one model turn at a time: while a task of the context works or waits for
   * approval, its function calls are open in the shared history, and another task's message
   * there would break it. Throws unsupported (-32004) naming the busy task.
   */
  async checkContextFree(contextId: string, except?: string): Promise<void> {
    const { tasks } = await this.opts.store.listTasks({ contextId, states: BUSY_STATES, limit: 2, offset: 0 });
    const busy = tasks.find((t) => t.id !== except);
    if (busy) {
      const state = stateName(busy.status?.state);
      const working = state === 'working' || state === 'submitted';
      throw unsupported(
        `Context ${contextId} is busy: task ${busy.id} is ${working ? 'still working' : 'waiting for approval'}; ` +
          `${working ? 'wait for it or cancel it' : 'answer or cancel it'} before starting another task in this conversation`,
      );
    }
  }

  /** Client-given MCP URLs pass the SSRF guard. Throws invalidParams. */
  async checkMcpUrls(requested: RequestedSettings | undefined, at = SETTINGS_AT): Promise<void> {
    const check = this.opts.checkMcpUrl;
    if (check === undefined) return;
    for (const [name, cfg] of Object.entries(requested?.settings.mcpServers ?? {})) {
      const url = (cfg as { url?: unknown }).url;
      if (typeof url !== 'string') continue;
      const bad = await check(url, `${at}.mcp_servers.${name}.url`);
      if (bad !== undefined) throw invalidParams(bad);
    }
  }

  /**
   * Loads a context (the caller's own), or creates it with the requested settings. The requested
   * settings are checked here, but an existing context's are changed only by applySettings, which
   * the caller runs once the message is accepted (inside `exclusive`, after checkContextFree): a
   * message refused because the conversation is busy must not switch its approval mode, tools or
   * MCP servers. `fresh`: the id was just made up here (a random UUID), so no context has it: it
   * is created without looking it up first, and taken as created.
   */
  async openContext(
    contextId: string,
    requested: RequestedSettings | undefined,
    caller: Caller | undefined,
    fresh = false,
  ): Promise<ContextState> {
    const { store, cache, access } = this.opts;
    access.checkSettings(caller, requested);
    await this.checkMcpUrls(requested);
    // The owner is checked before the context's tools (its MCP servers) start.
    const ownerCheck = (c: { principal?: string }) => access.checkOwner(caller, c.principal, `context ${contextId}`);
    let context = fresh ? undefined : await cache.loadContext(contextId, ownerCheck);
    if (context) {
      checkSameWorkspace(requested, context.workspace);
      await this.checkWorkspace(caller, context.workspace);
      return context;
    }
    const workspace = requested?.workspace ?? this.opts.defaultWorkspace;
    await this.checkWorkspace(caller, workspace);
    const created = { id: contextId, workspace, settings: requested?.settings ?? {}, principal: access.ownerFor(caller) };
    if (fresh) {
      // Stored with its first task, in the start's one commit (LiveTask.create).
      context = await cache.contextOf({ ...created, settings: structuredClone(created.settings), history: [], trustedTools: [] });
      context.unsaved = created;
      return context;
    }
    await store.createContext(created);
    context = await cache.loadContext(contextId, ownerCheck); // another process may have created it first
    if (context === undefined) throw new Error(`context ${contextId} was created but cannot be read back`);
    checkSameWorkspace(requested, context.workspace);
    return context;
  }

  /**
   * When workspaces belong to principals (Access.ownsWorkspaces): the default workspace is
   * everyone's, and so is no directory overlapping it; any other one is the caller's once it
   * holds or claims it (the store decides between concurrent claims). Throws forbidden.
   */
  async checkWorkspace(caller: Caller | undefined, workspace: string): Promise<void> {
    const { access, defaultWorkspace } = this.opts;
    if (!access.ownsWorkspaces || workspace === defaultWorkspace) return;
    if (overlaps(workspace, defaultWorkspace)) throw access.workspaceSharedDefault(workspace, defaultWorkspace);
    const principal = access.ownerFor(caller);
    if (principal === undefined) throw forbidden(`workspace ${workspace} can only be opened by an authenticated caller`);
    const claim = await this.opts.store.claimWorkspace(workspace, principal);
    if (!claim.ok) throw access.workspaceTaken(caller, workspace, claim.conflict);
  }

  /**
   * A new task's message is accepted in `context` (run inside `exclusive`): the conversation is
   * free (else checkContextFree's -32004, and nothing changed), and only then takes the message's
   * settings — a refused message must not switch a busy conversation's approval mode or tools.
   */
  async admit(context: ContextState, requested: RequestedSettings | undefined): Promise<void> {
    await this.checkContextFree(context.id);
    await this.applySettings(context, requested);
  }

  /** Whether `requested` would change the context's settings (applySettings would write). */
  changesSettings(context: ContextState, requested: RequestedSettings | undefined): boolean {
    return mergeSettings(context.settings, requested) !== undefined;
  }

  /** A later message changed the approval mode, allowed tools or MCP servers: store, and re-resolve tools. */
  async applySettings(context: ContextState, requested: RequestedSettings | undefined): Promise<void> {
    const next = mergeSettings(context.settings, requested);
    if (next === undefined) return;
    await this.opts.store.updateContextSettings(context.id, next);
    context.settings = next;
    context.tools = await this.opts.toolbox.forContext(context);
  }

  /** What the caller may answer to a pause: auth-required pauses when it may not approve (runtime/pause.ts). */
  authorityOf(caller: Caller | undefined): PauseAuthority {
    return { mayApprove: this.opts.access.canApprove(caller), approverRoles: this.opts.access.rules.approverRoles };
  }

  /**
   * Creates a task in `context` for `message` (its first history entry) and publishes its
   * snapshot and `working`; the caller sets it moving. `opts.metadata` goes on the Task;
   * `opts.history` (the user's turn for the model) joins the context's history. The task (and its
   * context, when new: ContextState.unsaved) is stored by one commit with its first events.
   * Without a message (the legacy dialect's POST /tasks) the task waits as a finished turn does
   * (`completed` here, `input-required` on its wire): its first message starts it, and nothing
   * of it stays in memory. Throws the store's error when the start could not be stored.
   */
  async createTask(
    context: ContextState,
    message: Message | undefined,
    caller: Caller | undefined,
    opts: { metadata?: Record<string, unknown>; dialect?: WireDialect; history?: ModelContent[] } = {},
  ): Promise<LiveTask> {
    const { cache } = this.opts;
    const principal = this.opts.access.ownerFor(caller);
    const taskId = randomUUID();
    const snapshot = createdSnapshot(taskId, context.id, message);
    if (opts.metadata !== undefined) snapshot.metadata = opts.metadata;
    const lease = message === undefined ? undefined : { owner: this.opts.instanceId, until: new Date(Date.now() + this.opts.leaseMs) };
    const task = cache.create(snapshot, context, principal, opts.dialect);
    const created = task.create(principal, { ...(lease ? { lease } : {}), ...(opts.dialect ? { dialect: opts.dialect } : {}) });
    task.pauseAuthority = this.authorityOf(caller);
    task.publishSnapshot();
    if (message !== undefined) startWorking(task);
    if (opts.history !== undefined) task.appendHistory(...opts.history);
    try {
      await created;
    } catch (err) {
      cache.forget(task);
      throw err;
    }
    await task.flush(); // committed: a check of the context from now on sees it working
    if (message === undefined) idleUntilAsked(task);
    return task;
  }
}
