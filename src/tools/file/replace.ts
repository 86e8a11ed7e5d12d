/** `replace`: replaces exact text in one file inside the workspace (or creates it), after showing a diff. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { unifiedDiff } from '../diff.js';
import { contentHash, staleProposal, ToolFailure } from '../tool.js';
import type { FileChange, Tool, ToolContext, ToolError, ToolParameterSchema, ToolProposal, ToolResult, Validation } from '../tool.js';
import {
  describeGivenPath,
  errorCode,
  errorReason,
  ProtectedPaths,
  resolveInWorkspace,
  relativeIn,
  type WorkspaceToolOptions,
} from '../workspace.js';
import { MAX_READ_BYTES as MAX_EDIT_BYTES, readTextFile } from './read-file.js';
import { contentTooLarge, writeCreatingParents } from './write-file.js';

/** Arguments of `replace`. */
export interface ReplaceArgs extends Record<string, unknown> {
  file_path: string;
  /** The exact text to replace; empty to create a new file. */
  old_string: string;
  new_string: string;
  /** How many occurrences old_string must have (all are replaced). Default 1. */
  expected_replacements?: number;
  /**
   * Set only by {@link ReplaceTool.withModifiedContent} (the user's own edit): the whole
   * new file content, written as is. validate() drops it, so the model cannot set it.
   */
  modified_content?: string;
}

type Planned = { ok: true; change: FileChange; rel: string; count: number } | { ok: false; error: ToolError };

function invalid(message: string): { ok: false; error: ToolError } {
  return { ok: false, error: { type: 'invalid_argument', message } };
}

/** Occurrences of `needle` in `haystack`, without overlaps (as split/join replaces them). */
function countOccurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

/**
 * Replaces `old_string` with `new_string` literally (no regex, no `$` patterns), requiring
 * exactly `expected_replacements` occurrences; an empty `old_string` creates a new file.
 * The occurrence checks run in propose() (so a call that cannot apply fails before anyone is
 * asked) and again in run(), against the file as it is then; a shown edit runs only on the
 * content its diff was computed from (ToolContext.expectedBase).
 */
export class ReplaceTool implements Tool<ReplaceArgs> {
  readonly name = 'replace';
  readonly kind = 'edit' as const;
  readonly description =
    'Replaces text within a file inside the workspace. old_string must match the current file content exactly ' +
    '(including whitespace and indentation) and, by default, exactly once: include enough surrounding lines to make ' +
    'it unique, or set expected_replacements to replace every one of several occurrences. Read the file first. ' +
    'To create a new file, use an empty old_string and put the content in new_string.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Path of the file to edit, absolute or relative to the workspace.' },
      old_string: {
        type: 'string',
        description:
          'The exact literal text to replace, with enough context (e.g. 3 lines before and after) to be unique. Empty to create a new file.',
      },
      new_string: { type: 'string', description: 'The exact literal text to put in place of old_string.' },
      expected_replacements: {
        type: 'integer',
        description: 'How many occurrences of old_string to replace (default 1); the edit fails if the count differs.',
      },
    },
    required: ['file_path', 'old_string', 'new_string'],
  };
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: WorkspaceToolOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<ReplaceArgs>> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    const { old_string, new_string, expected_replacements } = args;
    if (typeof old_string !== 'string') return invalid('old_string must be a string (the exact text to replace; empty to create a file)');
    if (typeof new_string !== 'string') return invalid('new_string must be a string (the replacement text)');
    const out: ReplaceArgs = { file_path: args.file_path as string, old_string, new_string };
    if (expected_replacements !== undefined && expected_replacements !== null) {
      if (typeof expected_replacements !== 'number' || !Number.isInteger(expected_replacements) || expected_replacements < 1) {
        return invalid(`expected_replacements must be an integer >= 1; got ${JSON.stringify(expected_replacements)}`);
      }
      out.expected_replacements = expected_replacements;
    }
    if (old_string !== '' && old_string === new_string) return { ok: false, error: noChange(out.file_path) };
    return { ok: true, args: out };
  }

  editedPath(args: ReplaceArgs): string {
    return args.file_path;
  }

  describe(args: ReplaceArgs): string {
    return args.old_string === '' && args.modified_content === undefined ? `Create ${args.file_path}` : `Edit ${args.file_path}`;
  }

  /** Throws (the agent records `proposal_failed`) when the edit cannot apply to the file as it is. */
  async propose(args: ReplaceArgs, ctx: Pick<ToolContext, 'workspace'>): Promise<ToolProposal> {
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok) throw new ToolFailure(planned.error);
    return { type: 'edit', change: planned.change };
  }

  withModifiedContent(args: ReplaceArgs, newContent: string): ReplaceArgs {
    return { ...args, modified_content: newContent };
  }

  /**
   * Applies the edit to the file as it is now. With `ctx.expectedBase` (a card showed the diff),
   * only if the file is still what that diff was computed from: a replacement that would still
   * apply to changed text is not made either, since the person never saw the resulting file.
   */
  async run(args: ReplaceArgs, ctx: ToolContext): Promise<ToolResult> {
    const where = describeGivenPath(ctx.workspace, args.file_path);
    const base = ctx.expectedBase;
    if (base !== undefined && (await this.currentBase(args, ctx.workspace)) !== base)
      return { isError: true, error: staleProposal(args.file_path) };
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok) return { isError: true, error: planned.error };
    const { change, rel, count } = planned;
    if (base !== undefined && change.baseHash !== base) return { isError: true, error: staleProposal(args.file_path) };
    try {
      await writeCreatingParents(change.filePath, change.newContent, {
        workspace: ctx.workspace,
        protectedPaths: this.protectedPaths,
        refuse: ctx.refuseWrite,
      });
    } catch (err) {
      return { isError: true, error: { type: 'write_error', message: `Cannot write ${where}: ${errorReason(err)}` } };
    }
    const what =
      args.modified_content !== undefined
        ? `Wrote the user's modified content to ${rel}`
        : change.oldContent === undefined
          ? `Created ${rel}`
          : `Replaced ${count} occurrence${count === 1 ? '' : 's'} in ${rel}`;
    return { llmContent: what, display: { type: 'diff', change } };
  }

  /** The base hash of the file as it is now (a file that cannot be read has none). */
  private async currentBase(args: ReplaceArgs, workspace: string): Promise<string | undefined> {
    const resolved = await resolveInWorkspace(workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return undefined;
    const read = await readTextFile(resolved.path, args.file_path, this.name);
    if (read.ok) return contentHash(read.text);
    return read.error.type === 'file_not_found' ? contentHash(undefined) : undefined;
  }

  /** Reads the file as it is now and computes the change, or why it cannot be made. */
  private async plan(args: ReplaceArgs, workspace: string): Promise<Planned> {
    const resolved = await resolveInWorkspace(workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    const where = describeGivenPath(workspace, args.file_path);
    const read = await readTextFile(resolved.path, where, this.name);
    if (!read.ok && read.error.type !== 'file_not_found') return read;
    if (!read.ok && (await underAFile(resolved.path))) {
      return { ok: false, error: { type: 'write_error', message: `Cannot write ${where}: a parent of it is a file, not a directory` } };
    }
    const oldContent = read.ok ? read.text : undefined;
    const rel = relativeIn(resolved.workspace, resolved.path);
    const computed = this.newContent(args, oldContent, where, rel);
    if (!computed.ok) return computed;
    const change: FileChange = {
      fileName: path.basename(resolved.path),
      filePath: resolved.path,
      newContent: computed.content,
      formattedDiff: unifiedDiff(rel, oldContent, computed.content),
      baseHash: contentHash(oldContent),
    };
    if (oldContent !== undefined) change.oldContent = oldContent;
    return { ok: true, change, rel, count: computed.count };
  }

  /** Applies the replacement to `oldContent` (undefined: no such file), with Gemini CLI's failure reasons. */
  private newContent(
    args: ReplaceArgs,
    oldContent: string | undefined,
    where: string,
    rel: string,
  ): { ok: true; content: string; count: number } | { ok: false; error: ToolError } {
    const fail = (type: string, message: string): { ok: false; error: ToolError } => ({ ok: false, error: { type, message } });
    if (args.modified_content !== undefined) return { ok: true, content: args.modified_content, count: 0 };
    const { old_string: oldString, new_string: newString } = args;
    if (oldContent === undefined) {
      if (oldString === '' && newString.length > MAX_EDIT_BYTES) return { ok: false, error: contentTooLarge(Buffer.byteLength(newString)) };
      if (oldString === '') return { ok: true, content: newString, count: 0 };
      return fail('file_not_found', `File not found: ${where}; to create a new file, use an empty old_string`);
    }
    if (oldString === '') {
      return fail('file_exists', `${where} already exists; use a non-empty old_string to edit an existing file`);
    }
    if (oldString === newString) return { ok: false, error: noChange(args.file_path) };
    const expected = args.expected_replacements ?? 1;
    const count = countOccurrences(oldContent, oldString);
    if (count === 0) {
      return fail(
        'edit_no_occurrence_found',
        `old_string was not found in ${rel}; re-read the file with read_file and copy the exact text including whitespace and indentation`,
      );
    }
    if (count !== expected) {
      const s = (n: number): string => `${n} occurrence${n === 1 ? '' : 's'}`;
      return fail(
        'edit_expected_occurrence_mismatch',
        `Expected ${s(expected)} of old_string in ${rel} but found ${count}; add more surrounding context to make ` +
          `old_string unique, or set expected_replacements to ${count}`,
      );
    }
    // Bounded before it is built: 2 MiB of `a` with each `a` replaced by a megabyte would not fit in memory.
    const length = oldContent.length + count * (newString.length - oldString.length);
    if (length > MAX_EDIT_BYTES) return { ok: false, error: contentTooLarge(length) };
    return { ok: true, content: oldContent.split(oldString).join(newString), count };
  }
}

function noChange(filePath: string): ToolError {
  return { type: 'edit_no_change', message: `old_string and new_string are identical, so editing ${filePath} would change nothing` };
}

/** True when the nearest existing ancestor of `p` is not a directory (so `p` cannot be created). */
async function underAFile(p: string): Promise<boolean> {
  for (let dir = path.dirname(p); ; dir = path.dirname(dir)) {
    try {
      return !(await fs.stat(dir)).isDirectory();
    } catch (err) {
      if (errorCode(err) === 'ENOTDIR') return true;
      if (errorCode(err) !== 'ENOENT' || path.dirname(dir) === dir) return false;
    }
  }
}
