/**
 * What a conversation (A2A context) keeps across its tasks: the workspace, the model
 * history and the trust grants. In memory in this version; see README "Durability".
 */
import type { ModelContent } from './model/model-client.js';
import type { TrustScope } from './approval-policy.js';

export interface ContextState extends TrustScope {
  id: string;
  /** Absolute real path; every tool call of the context is confined to it. */
  workspace: string;
  history: ModelContent[];
}

export class ContextRegistry {
  private readonly contexts = new Map<string, ContextState>();

  get(id: string): ContextState | undefined {
    return this.contexts.get(id);
  }

  create(id: string, workspace: string): ContextState {
    const ctx: ContextState = { id, workspace, history: [], trustedTools: new Set() };
    this.contexts.set(id, ctx);
    return ctx;
  }
}
