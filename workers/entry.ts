/**
 * The piscina task entry. The front runs one `attach` task per worker that
 * lasts the worker's lifetime: it hands the worker a MessagePort, and every
 * request afterwards is a frame on that port rather than a piscina task
 * (a persistent port costs one postMessage per batch; a task per request
 * costs a task round trip and a channel set-up). Piscina still owns the
 * threads: it starts them, and replaces one that dies.
 */
import { PROTOCOL_VERSION, type AttachTask } from '../protocol/frames.js';
import { WorkerSession } from './session.js';

export default function attach(task: AttachTask): Promise<void> {
  if (task.protocol !== PROTOCOL_VERSION) {
    throw new Error(`protocol mismatch: front speaks ${task.protocol}, worker speaks ${PROTOCOL_VERSION}`);
  }
  const session = new WorkerSession(task.port, task.routing);
  return session.closed;
}
