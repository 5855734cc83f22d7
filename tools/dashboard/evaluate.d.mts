// Types of evaluate.mjs for the TypeScript that imports it (test/dashboard.test.ts).
import type { Labels, Node, Sample } from './promql.mjs';

export interface SeriesSample {
  readonly labels: Labels;
  readonly value: number;
}

export type Result = { readonly scalar: number } | { readonly vector: readonly SeriesSample[] };

export class SeriesStore {
  add(t: number, samples: readonly Sample[], target?: Labels): void;
  series(name: string): { labels: Labels; points: [number, number][] }[];
}

export function evaluate(expr: string | Node, store: SeriesStore, t: number): Result;
export function labelKey(labels: Labels): string;
