/**
 * The agent card, in A2A v1.0 form (the SDK's AgentCard) and in the v0.3 form that
 * clients without `A2A-Version: 1.0` read. Declares streaming and the development-tool
 * extension as required (RFC §3.1).
 */
import { AgentCard as AgentCardCodec } from '@a2a-js/sdk';
import type { AgentCard } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { DEVTOOL_EXTENSION_DESCRIPTION, DEVTOOL_EXTENSION_URI } from './extension.js';
import type { JsonObject } from './a2a.js';

export interface AgentCardOptions {
  /** The JSON-RPC endpoint URL (POST /). */
  url: string;
  /** The HTTP+JSON binding's base URL (its routes, `/message:send`…, are relative to it); absent = not offered. */
  restUrl?: string;
  version: string;
  description: string;
  pushNotifications: boolean;
  /** Security schemes (v1.0 shapes) and requirements when authentication is on. */
  security?: Pick<AgentCard, 'securitySchemes' | 'securityRequirements'>;
  /** An authenticated caller can read an extended card (GetExtendedAgentCard): only where authentication is on. */
  extendedCard?: boolean;
  /** Where shell commands run (SHELL_SANDBOX as probed at start); absent = not stated. */
  shell?: ShellMode;
}

/**
 * Where shell commands run, as the card states it in the extension's params: `sandbox` is
 * `bwrap` (confined) or `off`; `unconfined_auto_approve` says whether, without the sandbox,
 * grants, prefixes or YOLO may still run commands without a card (SHELL_UNCONFINED_AUTO_APPROVE).
 */
export interface ShellMode {
  sandbox: 'bwrap' | 'off';
  unconfinedAutoApprove: boolean;
}

/** The extension's params (JSON): the shell mode in force. */
function extensionParams(shell: ShellMode | undefined): JsonObject | undefined {
  if (shell === undefined) return undefined;
  return { shell_sandbox: shell.sandbox, shell_unconfined_auto_approve: shell.sandbox === 'off' && shell.unconfinedAutoApprove };
}

/** One sentence on the shell mode, for the skill's description. */
function shellSentence(shell: ShellMode | undefined): string {
  if (shell === undefined) return '';
  if (shell.sandbox === 'bwrap') return ' Shell commands run in a bubblewrap sandbox.';
  return shell.unconfinedAutoApprove
    ? ' Shell commands run WITHOUT a sandbox, and may run without asking where the settings allow it.'
    : ' Shell commands run without a sandbox, so every one asks first.';
}

/** A built-in tool as the extended card lists it. */
export interface CardTool {
  name: string;
  description: string;
  /** Runs without asking (a read), or waits for a person's approval. */
  asks: boolean;
}

/** The v0.3 card's security fields (OpenAPI-style schemes). */
export interface CardSecurityV03 {
  securitySchemes: Record<string, unknown>;
  security: Array<Record<string, string[]>>;
}

export function buildAgentCard(o: AgentCardOptions): AgentCard {
  return {
    name: 'devtool-a2a-server',
    description: o.description,
    supportedInterfaces: duplicateInterfacesForLegacy(
      [
        { url: o.url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        ...(o.restUrl ? [{ url: o.restUrl, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' }] : []),
        // v0.3's HTTP+JSON paths carry their own `/v1` (`/v1/message:send`): its base is the server's root,
        // and a request there without A2A-Version speaks 0.3 (v1.0 §3.6.2).
        ...(o.restUrl ? [{ url: o.url, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '0.3' }] : []),
      ],
      ['JSONRPC'],
    ),
    provider: undefined,
    version: o.version,
    capabilities: {
      streaming: true,
      pushNotifications: o.pushNotifications,
      extensions: [
        { uri: DEVTOOL_EXTENSION_URI, description: DEVTOOL_EXTENSION_DESCRIPTION, required: true, params: extensionParams(o.shell) },
      ],
      extendedAgentCard: o.extendedCard ?? false,
    },
    securitySchemes: o.security?.securitySchemes ?? {},
    securityRequirements: o.security?.securityRequirements ?? [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [
      {
        id: 'development',
        name: 'Software development',
        description: `Reads, writes and runs code in a workspace, asking before anything with side effects.${shellSentence(o.shell)}`,
        tags: ['code', 'files', 'shell'],
        examples: ['Add a unit test for the parser', 'Why does `npm test` fail?'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/**
 * The card an authenticated caller reads (GetExtendedAgentCard): the public card plus one skill
 * per built-in tool, saying what it does and whether it asks first. The catalogue is left out of
 * the public card: a stranger learns what the agent is for, not what to aim at.
 */
export function buildExtendedCard(card: AgentCard, tools: readonly CardTool[]): AgentCard {
  const skills = tools.map((tool) => ({
    id: `tool:${tool.name}`,
    name: tool.name,
    description: `${tool.description.split('\n', 1)[0]} (${tool.asks ? 'asks for approval first' : 'runs without asking: it only reads'})`,
    tags: ['tool', tool.asks ? 'asks' : 'reads'],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
  return { ...card, skills: [...card.skills, ...skills] };
}

/** The card's v1.0 JSON. */
export function cardToV1Json(card: AgentCard): unknown {
  return AgentCardCodec.toJSON(card);
}

/**
 * The card read without a version header: the v0.3 form (protocolVersion 0.3.0, `url` +
 * `preferredTransport`) that v0.3 clients read, plus the v1.0 `supportedInterfaces`, so a v1.0
 * client that fetches the card before it knows the server's version finds its interfaces.
 */
export function cardToV03Json(card: AgentCard, security?: CardSecurityV03): JsonObject {
  const caps = card.capabilities;
  const v1 = cardToV1Json(card) as { supportedInterfaces?: JsonObject[] };
  return {
    ...(security ? { securitySchemes: security.securitySchemes, security: security.security } : {}),
    protocolVersion: '0.3.0',
    name: card.name,
    description: card.description,
    url: card.supportedInterfaces[0]?.url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: card.supportedInterfaces
      .filter((i) => i.protocolVersion === '0.3')
      .map((i) => ({ url: i.url, transport: i.protocolBinding })),
    version: card.version,
    capabilities: {
      streaming: caps?.streaming ?? false,
      pushNotifications: caps?.pushNotifications ?? false,
      stateTransitionHistory: false,
      extensions: (caps?.extensions ?? []).map((e) => ({
        uri: e.uri,
        description: e.description,
        required: e.required,
        ...(e.params !== undefined ? { params: e.params } : {}),
      })),
    },
    ...(caps?.extendedAgentCard ? { supportsAuthenticatedExtendedCard: true } : {}),
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, tags: s.tags, examples: s.examples })),
    supportedInterfaces: v1.supportedInterfaces ?? [],
  };
}
