// deploy/grafana/kiln-dashboard.json is a Grafana dashboard: checked against Grafana's own
// dashboard schema as @grafana/schema publishes it (the TypeScript types generated from the
// CUE schema: the JSON is type-checked as a `Dashboard` literal, so a misspelt or unknown
// field, a wrong type or a value outside an enum fails), and every PromQL expression names
// only metrics Kiln exports (the names registered in src/, the workers' default process
// metrics, a histogram's _bucket/_sum/_count series).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Registry, collectDefaultMetrics } from 'prom-client';
import ts from 'typescript';

const root = new URL('../../', import.meta.url).pathname;
const dashboardPath = join(root, 'deploy/grafana/kiln-dashboard.json');
const dashboardText = readFileSync(dashboardPath, 'utf8');

interface Target {
  readonly expr?: string;
}
interface PanelJson {
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly Target[];
  readonly panels?: readonly PanelJson[];
}
interface DashboardJson {
  readonly panels: readonly PanelJson[];
  readonly templating: {
    readonly list: readonly { readonly name: string; readonly query?: unknown }[];
  };
}

const dashboard = JSON.parse(dashboardText) as DashboardJson;

/** Type errors of the dashboard as a `Dashboard` of @grafana/schema (enums as their values). */
function schemaErrors(json: string): string[] {
  // Beside the JSON's folder so '@grafana/schema' resolves from the project's node_modules.
  const checkFile = join(root, 'deploy/grafana/dashboard-check.ts');
  const source = [
    "import type { Dashboard } from '@grafana/schema';",
    // Enums as the JSON spells them: a string enum as its values, numbers as they are.
    'type Json<T> = unknown extends T ? T',
    '  : T extends string ? `${T}`',
    '  : T extends number | boolean | null | undefined ? T',
    '  : T extends readonly (infer U)[] ? Json<U>[]',
    '  : { [K in keyof T]: Json<T[K]> };',
    `export const dashboard: Json<Dashboard> = ${json};`,
    '',
  ].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, ...rest) =>
    fileName === checkFile
      ? ts.createSourceFile(fileName, source, languageVersion)
      : getSourceFile(fileName, languageVersion, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => fileName === checkFile || fileExists(fileName);
  const readFile = host.readFile.bind(host);
  host.readFile = (fileName) => (fileName === checkFile ? source : readFile(fileName));
  const program = ts.createProgram([checkFile], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

/** Every metric name registered in src/ (prom-client constructors and helpers name them in literals). */
function exportedMetrics(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/'(kiln_[a-z0-9_]+)'/g)) {
          if (match[1] !== undefined) names.add(match[1]);
        }
      }
    }
  };
  walk(join(root, 'src'));
  // The workers' default process and Node.js metrics (worker-metrics.ts: prefix kiln_worker_).
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kiln_worker_' });
  for (const metric of registry.getMetricsAsArray()) names.add(metric.name);
  return names;
}

function panelsOf(panels: readonly PanelJson[]): PanelJson[] {
  return panels.flatMap((panel) => [panel, ...panelsOf(panel.panels ?? [])]);
}

function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(kiln_[a-z0-9_]+)\b/g)].flatMap((m) =>
    m[1] === undefined ? [] : [m[1]],
  );
}

void test("the dashboard type-checks as a Dashboard of Grafana's schema (@grafana/schema)", () => {
  assert.deepEqual(schemaErrors(dashboardText), []);
});

void test('the schema check catches what Grafana would refuse', () => {
  const misspelt = JSON.parse(dashboardText) as Record<string, unknown>;
  misspelt.panelz = [];
  assert.match(schemaErrors(JSON.stringify(misspelt)).join('\n'), /'"panelz"' does not exist/);
  const wrongType = JSON.parse(dashboardText) as Record<string, unknown>;
  wrongType.schemaVersion = 'thirty-nine';
  assert.match(
    schemaErrors(JSON.stringify(wrongType)).join('\n'),
    /'string' is not assignable to type 'number'/,
  );
  const badEnum = JSON.parse(dashboardText) as {
    panels: { fieldConfig?: { defaults: Record<string, unknown> } }[];
  };
  const panel = badEnum.panels.find((p) => p.fieldConfig !== undefined);
  assert.ok(panel?.fieldConfig !== undefined);
  panel.fieldConfig.defaults.thresholds = { mode: 'relative', steps: [] };
  assert.notDeepEqual(schemaErrors(JSON.stringify(badEnum)), []);
});

void test('every PromQL expression names metrics Kiln exports, per endpoint', () => {
  const exported = exportedMetrics();
  const known = (name: string): boolean =>
    exported.has(name) || exported.has(name.replace(/_(bucket|sum|count)$/, ''));
  const panels = panelsOf(dashboard.panels).filter((panel) => panel.type !== 'row');
  assert.ok(panels.length >= 9, `${panels.length} panels`);
  const unknown: string[] = [];
  for (const panel of panels) {
    assert.ok((panel.targets ?? []).length > 0, `${panel.title}: no query`);
    for (const target of panel.targets ?? []) {
      const expr = target.expr ?? '';
      const names = metricNames(expr);
      assert.ok(names.length > 0, `${panel.title}: ${expr} names no Kiln metric`);
      for (const name of names) if (!known(name)) unknown.push(`${panel.title}: ${name}`);
      // Per endpoint: every series selected by the template variable.
      for (const selector of expr.matchAll(/kiln_[a-z0-9_]+\{([^}]*)\}/g)) {
        assert.match(selector[1] ?? '', /endpoint=~"\$endpoint"/, `${panel.title}: ${expr}`);
      }
    }
  }
  assert.deepEqual(unknown, []);
  const variables = dashboard.templating.list.map((v) => v.name);
  assert.deepEqual(variables, ['datasource', 'endpoint']);
  const endpointQuery = JSON.stringify(dashboard.templating.list[1]?.query ?? '');
  for (const name of metricNames(endpointQuery)) assert.ok(known(name), name);
  // The panels the issue asks for.
  const titles = panels.map((p) => p.title.toLowerCase()).join(' | ');
  for (const word of ['requests per second', 'errors', 'p99', 'batch', 'queue', 'replicas']) {
    assert.ok(titles.includes(word), `no ${word} panel in: ${titles}`);
  }
});
