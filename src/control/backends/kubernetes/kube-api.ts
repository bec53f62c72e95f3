// The few Kubernetes API calls the backend makes, through @kubernetes/client-node: server-side
// apply under one field manager, delete, list and watch of one namespace. Every failure becomes
// a KubeApiError that names the verb, the resource and what the API server said, so a
// kubeconfig without rights or a missing namespace reads as such wherever it surfaces (a
// refused `kiln up`, a replica's not-ready reason) instead of a client library's dump.

import { KubeConfig, KubernetesObjectApi, PatchStrategy, Watch } from '@kubernetes/client-node';
import type { KubeObject } from './kube-object.ts';

/** The field manager every object Kiln applies is owned by (server-side apply). */
export const fieldManager = 'kiln';

/** A collection the backend lists and watches in its namespace. */
export interface KubeCollection {
  /** '/api/v1' or '/apis/<group>/<version>'. */
  readonly prefix: string;
  /** The resource's plural name: 'pods', 'deployments' … */
  readonly plural: string;
  readonly apiVersion: string;
  readonly kind: string;
}

export const podsCollection: KubeCollection = {
  prefix: '/api/v1',
  plural: 'pods',
  apiVersion: 'v1',
  kind: 'Pod',
};
export const deploymentsCollection: KubeCollection = {
  prefix: '/apis/apps/v1',
  plural: 'deployments',
  apiVersion: 'apps/v1',
  kind: 'Deployment',
};
export const endpointSlicesCollection: KubeCollection = {
  prefix: '/apis/discovery.k8s.io/v1',
  plural: 'endpointslices',
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
};

/** A listed or watched object: what the backend reads of it is under metadata/spec/status. */
export type KubeItem = KubeObject & {
  metadata: KubeObject['metadata'] & { resourceVersion?: string; deletionTimestamp?: string };
};

export interface KubeList {
  readonly items: readonly KubeItem[];
  readonly resourceVersion: string;
}

/** What a watch stream delivers: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (a Status). */
export type KubeWatchEvent = { readonly type: string; readonly object: KubeItem };

export interface KubeWatchHandle {
  abort(): void;
}

export class KubeApiError extends Error {
  constructor(
    /** HTTP status (0: no answer at all). */
    readonly status: number,
    readonly verb: string,
    readonly resource: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** The API server's words for a failed call: its Status message when it sent one. */
function statusMessage(body: unknown): string | null {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body) as unknown;
    } catch {
      return body.trim() === '' ? null : body.trim();
    }
  }
  const message = (parsed as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : null;
}

/**
 * A client failure as a KubeApiError: 403 says which right is missing, 404 of a namespaced call
 * names the namespace, anything else keeps the server's message.
 */
export function kubeApiError(
  error: unknown,
  verb: string,
  resource: string,
  namespace: string,
): KubeApiError {
  if (error instanceof KubeApiError) return error;
  const status =
    (error as { code?: unknown }).code ?? (error as { statusCode?: unknown }).statusCode ?? 0;
  const code = typeof status === 'number' ? status : 0;
  const said =
    statusMessage((error as { body?: unknown }).body) ??
    (error instanceof Error ? error.message.split('\n')[0] : String(error));
  const what = `${verb} ${resource} in namespace ${namespace}`;
  switch (code) {
    case 401:
      return new KubeApiError(
        code,
        verb,
        resource,
        `the kubeconfig's credentials were refused (401) to ${what}: ${said}`,
      );
    case 403:
      return new KubeApiError(
        code,
        verb,
        resource,
        `forbidden: the kubeconfig's user may not ${what} (403): ${said}`,
      );
    case 404:
      return new KubeApiError(code, verb, resource, `not found (404) on ${what}: ${said}`);
    case 0:
      return new KubeApiError(
        code,
        verb,
        resource,
        `the Kubernetes API could not be reached to ${what}: ${said}`,
      );
    default:
      return new KubeApiError(code, verb, resource, `${what} failed (${code}): ${said}`);
  }
}

/** Plural of a kind, for messages (the client resolves the real one by discovery). */
function resourceOf(object: KubeObject): string {
  return `${object.kind.toLowerCase()}s/${object.metadata.name}`;
}

/**
 * The kubeconfig the standard places give: $KUBECONFIG, ~/.kube/config, else the pod's service
 * account (in-cluster), as kubectl finds it.
 */
export function defaultKubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}

export class KubeApi {
  private readonly objects: KubernetesObjectApi;

  constructor(
    private readonly config: KubeConfig,
    readonly namespace: string,
  ) {
    this.objects = KubernetesObjectApi.makeApiClient(config);
  }

  /** The namespace the current context names ('default' when none). */
  static contextNamespace(config: KubeConfig): string {
    return config.getContextObject(config.getCurrentContext())?.namespace ?? 'default';
  }

  /** Server-side apply: Kiln's fields of the object, taken over from any other manager. */
  async apply(object: KubeObject): Promise<void> {
    const spec = { ...object, metadata: { ...object.metadata, namespace: this.namespace } };
    try {
      await this.objects.patch(
        spec,
        undefined,
        undefined,
        fieldManager,
        true,
        PatchStrategy.ServerSideApply,
      );
    } catch (error) {
      throw kubeApiError(error, 'patch', resourceOf(object), this.namespace);
    }
  }

  /** Deletes the object; one already gone is not an error. */
  async remove(object: KubeObject): Promise<void> {
    const spec = { ...object, metadata: { ...object.metadata, namespace: this.namespace } };
    try {
      await this.objects.delete(spec, undefined, undefined, undefined, undefined, 'Background');
    } catch (error) {
      const failure = kubeApiError(error, 'delete', resourceOf(object), this.namespace);
      if (failure.status !== 404) throw failure;
    }
  }

  /** Fails with a clear error when the namespace does not exist (403: cannot tell, assumed). */
  async checkNamespace(): Promise<void> {
    try {
      await this.objects.read({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: this.namespace },
      });
    } catch (error) {
      const failure = kubeApiError(error, 'get', `namespaces/${this.namespace}`, this.namespace);
      if (failure.status === 404)
        throw new KubeApiError(
          404,
          'get',
          'namespaces',
          `namespace ${this.namespace} does not exist (create it, or pick another with --kube-namespace)`,
        );
      if (failure.status !== 403) throw failure;
    }
  }

  async list(collection: KubeCollection, labelSelector: string): Promise<KubeList> {
    try {
      const list = await this.objects.list(
        collection.apiVersion,
        collection.kind,
        this.namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        labelSelector,
      );
      // Typed by the client's serializer (dates as Date): back to the API's plain JSON shape,
      // what watch events carry, so both read alike.
      const plain = JSON.parse(JSON.stringify(list)) as {
        items?: KubeItem[];
        metadata?: { resourceVersion?: string };
      };
      return { items: plain.items ?? [], resourceVersion: plain.metadata?.resourceVersion ?? '' };
    } catch (error) {
      throw kubeApiError(error, 'list', collection.plural, this.namespace);
    }
  }

  /**
   * Streams the collection's changes after resourceVersion; `done` once the stream ends (an
   * error with its status, or null when the server closed it).
   */
  async watch(
    collection: KubeCollection,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (event: KubeWatchEvent) => void,
    done: (error: KubeApiError | null) => void,
  ): Promise<KubeWatchHandle> {
    const watch = new Watch(this.config);
    const controller = await watch.watch(
      this.collectionPath(collection),
      { labelSelector, resourceVersion, allowWatchBookmarks: true },
      (type: string, object: KubeItem) => onEvent({ type, object }),
      (error: unknown) => {
        if (error === null || error === undefined) return done(null);
        // Our own abort, or the server going away mid-stream: both end the stream.
        if ((error as { name?: string }).name === 'AbortError') return done(null);
        done(kubeApiError(error, 'watch', collection.plural, this.namespace));
      },
    );
    return { abort: () => controller.abort() };
  }

  private collectionPath(collection: KubeCollection): string {
    return `${collection.prefix}/namespaces/${encodeURIComponent(this.namespace)}/${collection.plural}`;
  }
}
