/**
 * The status class of an HTTP status: the one rule `/metrics`
 * (`status_class` label) and `/status` (success, client_errors,
 * server_errors) both count by.
 */
export type StatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx';

const CLASSES: readonly StatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx'];

/** `499` (the client left first) is a `4xx`; anything outside 100-599 counts as `5xx`. */
export function statusClass(status: number): StatusClass {
  return CLASSES[Math.trunc(status / 100) - 1] ?? '5xx';
}
