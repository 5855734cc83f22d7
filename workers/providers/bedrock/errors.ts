/**
 * Bedrock's errors in the compatible terms (CONTRACT.md, Native providers;
 * the Bedrock Runtime API reference's "Errors" of Converse, ConverseStream
 * and InvokeModel):
 * - a 4xx body `{"message": …}` (`Message` from some services), its type
 *   in the `x-amzn-errortype` header (`ValidationException:http://…`),
 *   becomes `{"error":{"message","type","param":null,"code"}}` with the
 *   same status: `type` is OpenAI's for that status, `code` Bedrock's
 *   exception name (403s, 429, 408 and 5xx are classified by status in
 *   routing/failure.ts: 502 upstream_auth_failed, rate limited, transient);
 * - an exception frame of a ConverseStream (`:message-type: exception`,
 *   its name in `:exception-type`) or an error frame (`:message-type:
 *   error`, `:error-code`, `:error-message`) is a failure of the attempt:
 *   `throttlingException` as a 429 answer would be (rate limited, and
 *   passed on as that 429 when it is the last failure),
 *   `validationException` as a 400 (the caller's), the rest
 *   (`modelStreamErrorException`, `internalServerException`,
 *   `serviceUnavailableException`, names added later, error frames)
 *   transient, with the status the SDK gives each.
 */
import { AttemptFailure, providerFailure, redactKeys } from '../../routing/failure.js';
import { errorObject, isRecord, stringOr, textMessage, tryParse } from '../compatible.js';

/** The exception's name from `x-amzn-errortype` (`ThrottlingException:http://internal.amazon.com/…`), or null. */
export function errorTypeOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.length === 0) return null;
  const name = value.split(':')[0] as string;
  return /^[A-Za-z][A-Za-z0-9_.#]{0,99}$/.test(name) ? name.slice(name.lastIndexOf('#') + 1) : null;
}

export function bedrockError(status: number, text: string, errorType: string | null): { readonly contentType: string; readonly body: Uint8Array } {
  const json = tryParse(text);
  const message = isRecord(json) ? (stringOr(json.message) ?? stringOr(json.Message)) : null;
  const code = errorType ?? (isRecord(json) ? stringOr(json.__type) : null);
  return errorObject(status, { message: message ?? textMessage(status, isRecord(json) ? '' : text), type: null, code, param: null });
}

/** The status each stream exception has as an answer (the SDK's error shapes). */
const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  throttlingException: 429,
  validationException: 400,
  modelStreamErrorException: 424,
  internalServerException: 500,
  serviceUnavailableException: 503,
};

/** An exception (or error) frame of a ConverseStream, as the failure of its attempt. */
export function streamExceptionFailure(name: string, text: string): AttemptFailure {
  const status = EXCEPTION_STATUS[name] ?? 500;
  if (status === 429 || status === 400) {
    // Passed on as the answer Bedrock gives outside a stream; the exception name as its code.
    const code = `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
    return providerFailure(status, [], 0, 'application/json', bedrockError(status, text, code).body);
  }
  const json = tryParse(text);
  const said = isRecord(json) ? (stringOr(json.message) ?? stringOr(json.Message) ?? '') : text;
  const named = /^[A-Za-z][A-Za-z0-9]{0,63}$/.test(name) ? name : 'exception';
  return new AttemptFailure('transient', 'upstream_error', `the provider stream reported an error (${named})`, status, [], null, 0, `${named}: ${redactKeys(said)}`);
}
