/**
 * A Kubernetes object as plain data: what the renderer produces and what the backend applies with
 * server-side apply. Deliberately loose beyond `metadata` — the renderer builds each kind's spec and
 * the API server validates it; the backend only needs kind, name, namespace and labels.
 */
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [k: string]: unknown;
};
