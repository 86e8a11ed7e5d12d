/**
 * Push notification configs as the A2A methods see them: checked (URL scheme, SSRF guard,
 * authentication fields) before anything is stored, then kept in the PushStore with a
 * delivery cursor. Saving one wakes the dispatcher.
 */
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import { invalidParams } from '../protocol/errors.js';
import { DEFAULT_CONFIG_ID } from '../protocol/push-config.js';
import type { PushConfigRecord, PushStore, PushWireVersion } from './push-store.js';
import { checkPushUrl, type LookupFn } from './ssrf-guard.js';

export interface PushRegistryOptions {
  store: PushStore;
  allowPrivate: boolean;
  lookup?: LookupFn;
  /** Called after a config is saved (the dispatcher looks for work). */
  onSaved?: () => void;
}

type ConfigIn = Pick<TaskPushNotificationConfig, 'url' | 'token' | 'authentication'> &
  Partial<Pick<TaskPushNotificationConfig, 'id' | 'taskId'>>;

export class PushRegistry {
  constructor(private readonly opts: PushRegistryOptions) {}

  /** Throws invalidParams naming the field when the config cannot be used. */
  async check(config: ConfigIn, at: string): Promise<void> {
    if (!config.url) throw invalidParams(`${at}.url is required`);
    // A name that does not resolve yet is accepted here; every delivery checks it again and
    // connects only to the addresses that check approved.
    const checked = await checkPushUrl(config.url, {
      allowPrivate: this.opts.allowPrivate,
      lookup: this.opts.lookup,
      field: `${at}.url`,
      acceptUnresolved: true,
    });
    if (!checked.ok) throw invalidParams(checked.message);
    const auth = config.authentication;
    if (auth && (auth.scheme || auth.credentials)) {
      if (!/^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*$/.test(auth.scheme ?? '')) {
        throw invalidParams(
          `${at}.authentication.schemes must name one HTTP auth scheme (e.g. "Bearer"), got ${JSON.stringify(auth.scheme)}`,
        );
      }
      if (/[\r\n]/.test(auth.credentials ?? '')) throw invalidParams(`${at}.authentication.credentials must not contain line breaks`);
    }
    if (config.token && /[\r\n]/.test(config.token)) throw invalidParams(`${at}.token must not contain line breaks`);
  }

  /** Creates or replaces a config (id defaults to DEFAULT_CONFIG_ID); a new one starts after event `afterSeq`. */
  async save(
    config: ConfigIn & { taskId: string },
    wireVersion: PushWireVersion,
    principal: string | undefined,
    afterSeq: number,
  ): Promise<PushConfigRecord> {
    const id = config.id || DEFAULT_CONFIG_ID;
    const auth =
      config.authentication && config.authentication.scheme
        ? { scheme: config.authentication.scheme, credentials: config.authentication.credentials ?? '' }
        : undefined;
    await this.opts.store.savePushConfig(
      {
        taskId: config.taskId,
        id,
        url: config.url,
        ...(config.token ? { token: config.token } : {}),
        ...(auth ? { authentication: auth } : {}),
        wireVersion,
        principal,
      },
      afterSeq,
    );
    this.opts.onSaved?.();
    const saved = await this.opts.store.getPushConfig(config.taskId, id);
    if (!saved) throw new Error(`push config ${id} of task ${config.taskId} was saved but cannot be read back`);
    return saved;
  }

  /** One config; without an id, the default one. */
  async get(taskId: string, id: string | undefined): Promise<PushConfigRecord | undefined> {
    if (id) return this.opts.store.getPushConfig(taskId, id);
    return (await this.opts.store.getPushConfig(taskId, DEFAULT_CONFIG_ID)) ?? this.opts.store.getPushConfig(taskId, taskId);
  }

  list(taskId: string): Promise<PushConfigRecord[]> {
    return this.opts.store.listPushConfigs(taskId);
  }

  /** Deletes one config (without an id, the default one); false when there was none. */
  async delete(taskId: string, id: string | undefined): Promise<boolean> {
    if (id) return this.opts.store.deletePushConfig(taskId, id);
    return (await this.opts.store.deletePushConfig(taskId, DEFAULT_CONFIG_ID)) || this.opts.store.deletePushConfig(taskId, taskId);
  }
}
