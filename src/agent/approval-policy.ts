/**
 * Which calls wait for a person, and which answers they may give.
 * Seed 000: reads run, writes wait. A `proceed_always` answer trusts the tool for
 * the rest of the context (every later task in it included).
 */
import { ConfirmationOptionId } from '../protocol/extension.js';
import type { AnyTool } from '../tools/tool.js';
import type { OfferedOption } from './wire/agent-events.js';

export interface TrustScope {
  trustedTools: Set<string>;
}

/** Decides whether a call of `tool` must be confirmed in a context with `trust`. */
export function needsApproval(tool: AnyTool, trust: TrustScope): boolean {
  if (tool.kind === 'read') return false;
  return !trust.trustedTools.has(tool.name);
}

/** The options offered for a call of `tool` (RFC §3.2 ConfirmationOption). */
export function optionsFor(tool: AnyTool): OfferedOption[] {
  const options: OfferedOption[] = [
    { id: ConfirmationOptionId.proceedOnce, name: 'Allow once' },
    {
      id: ConfirmationOptionId.proceedAlways,
      name: 'Allow always',
      description: `Run ${tool.name} without asking for the rest of this conversation`,
    },
  ];
  if (tool.withModifiedContent !== undefined) {
    options.push({
      id: ConfirmationOptionId.modifyWithEditor,
      name: 'Modify',
      description: 'Write your edited content instead (send it in file_details.new_content)',
    });
  }
  options.push({ id: ConfirmationOptionId.cancel, name: 'Reject' });
  return options;
}
