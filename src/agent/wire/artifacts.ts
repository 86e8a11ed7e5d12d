/**
 * Dialect-free artifacts on the wire: both dialects send them the same way, as A2A
 * TaskArtifactUpdateEvents (A2A §4.2.2), and the task keeps them in `Task.artifacts`.
 */
import type { Artifact, Part, Task } from '@a2a-js/sdk';
import { dataPart, textPart } from '../../protocol/a2a.js';
import type { AgentArtifact, ArtifactPart } from './agent-events.js';
import type { EncodeContext, EncodedEvent } from './wire-encoder.js';

function wirePart(part: ArtifactPart): Part {
  if ('text' in part) return textPart(part.text);
  if ('data' in part) return dataPart(part.data);
  const { name = '', mediaType = '', bytes, uri } = part.file;
  const content =
    uri !== undefined ? { $case: 'url' as const, value: uri } : { $case: 'raw' as const, value: Buffer.from(bytes ?? '', 'base64') };
  return { content, metadata: undefined, filename: name, mediaType };
}

/** The A2A Artifact of an agent artifact (chunk). */
export function wireArtifact(artifact: AgentArtifact): Artifact {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name ?? '',
    description: artifact.description ?? '',
    parts: artifact.parts.map(wirePart),
    metadata: undefined,
    extensions: [],
  };
}

/** The artifact-update event of an agent artifact (chunk). */
export function artifactEvent(artifact: AgentArtifact, ctx: EncodeContext): EncodedEvent {
  return {
    $case: 'artifactUpdate',
    value: {
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      artifact: wireArtifact(artifact),
      append: artifact.append ?? false,
      lastChunk: artifact.lastChunk ?? false,
      metadata: undefined,
    },
  };
}

/** Applies an artifact (chunk) to a task: a new artifact, a replaced one, or parts appended to one. */
export function applyArtifact(task: Task, artifact: Artifact, append: boolean): void {
  const at = task.artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
  const known = at >= 0 ? task.artifacts[at] : undefined;
  // The task keeps copies: appending to a kept artifact must not change the event it came from.
  const copy = { ...artifact, parts: [...artifact.parts] };
  if (known === undefined) task.artifacts.push(copy);
  else if (append) known.parts.push(...artifact.parts);
  else task.artifacts[at] = copy;
}
