/**
 * What the agent needs of a logger (pino's shape: an object of fields, then the message).
 * Fastify's logger satisfies it; tests pass a recording one.
 */
export interface AgentLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
