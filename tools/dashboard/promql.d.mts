// Types of promql.mjs for the TypeScript that imports it (test/dashboard.test.ts).
export type Labels = Record<string, string>;

export interface Matcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
}

export type Node =
  | { readonly type: 'number'; readonly value: number }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'selector'; readonly name: string; readonly matchers: readonly Matcher[]; readonly range: number | null }
  | { readonly type: 'call'; readonly fn: string; readonly args: readonly Node[] }
  | { readonly type: 'aggregate'; readonly op: string; readonly by: readonly string[] | null; readonly without: readonly string[] | null; readonly param: Node | null; readonly expr: Node }
  | {
      readonly type: 'binary';
      readonly op: string;
      readonly bool: boolean;
      readonly on: readonly string[] | null;
      readonly ignoring: readonly string[] | null;
      readonly group: { readonly side: 'left' | 'right'; readonly labels: readonly string[] } | null;
      readonly left: Node;
      readonly right: Node;
    }
  | { readonly type: 'unary'; readonly op: string; readonly expr: Node };

export type Selector = Extract<Node, { type: 'selector' }>;

export interface Sample {
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}

export interface DatasourceRef {
  readonly type: string;
  readonly uid: string;
}

/** What this code reads of Grafana's dashboard JSON (the test checks the file has it). */
export interface Target {
  readonly refId: string;
  readonly expr: string;
  readonly legendFormat?: string;
  readonly datasource?: DatasourceRef;
}

export interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly gridPos: { readonly x: number; readonly y: number; readonly w: number; readonly h: number };
  readonly datasource?: DatasourceRef;
  readonly targets?: readonly Target[];
  readonly fieldConfig?: { readonly defaults?: { readonly unit?: string } };
}

export interface Variable {
  readonly name: string;
  readonly type: string;
  /** A datasource variable's plugin type; a query variable's query. */
  readonly query?: string | { readonly query: string };
  readonly definition?: string;
  readonly datasource?: DatasourceRef;
  readonly includeAll?: boolean;
  readonly multi?: boolean;
  readonly allValue?: string;
}

export interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly schemaVersion: number;
  readonly templating: { readonly list: readonly Variable[] };
  readonly panels: readonly Panel[];
}

/** What this code reads of the PrometheusRule (the test checks the file has it). */
export interface Rule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface RuleFile {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec: { readonly groups: readonly { readonly name: string; readonly rules: readonly Rule[] }[] };
}

export const DASHBOARD_FILE: string;
export const RULES_FILE: string;
export function readDashboard(): Dashboard;
export function readRules(): RuleFile;
export function panelQueries(dashboard: Dashboard): { panel: Panel; refId: string; expr: string; legendFormat: string }[];
export function ruleQueries(rules: RuleFile): { alert: string; expr: string }[];
export function rangeVariables(scrapeSeconds: number, intervalSeconds?: number): Record<string, string>;
export function allValues(dashboard: Dashboard): Record<string, string>;
export function expand(expr: string, values: Record<string, string>): string;
export function parseLabelValues(query: string): { selector: Selector; label: string };
export function parsePromql(expr: string): Node;
export function seconds(duration: string): number;
export function scrapeSamples(text: string): Promise<Sample[]>;
