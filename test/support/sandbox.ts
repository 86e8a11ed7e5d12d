/**
 * The real bubblewrap sandbox for tests: built once per process, or the reason it cannot run
 * here (those tests are skipped with it; CI installs bubblewrap).
 */
import { createShellSandbox, SandboxUnavailableError, type ShellSandbox } from '../../src/tools/shell/sandbox.js';

/** A bwrap sandbox (no protected paths, no network), or why there is none. */
export function bwrapSandbox(): ShellSandbox | string {
  try {
    return createShellSandbox('bwrap', { protectedPaths: [], network: false }).sandbox;
  } catch (err) {
    if (err instanceof SandboxUnavailableError) return `bubblewrap unavailable: ${err.message}`;
    throw err;
  }
}

let probed: ShellSandbox | string | undefined;

/** Why the bwrap tests are skipped here, or false when bubblewrap works (probed once). */
export function bwrapSkip(): string | false {
  probed ??= bwrapSandbox();
  return typeof probed === 'string' ? probed : false;
}
